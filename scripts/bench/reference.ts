// Machine references measured in the same run as a benchmark: memory read bandwidth and onnxruntime's MatMul peak.
import * as ort from 'onnxruntime-node';
import {
  adviseHugePages,
  DataType,
  defaultThreads,
  GraphBuilder,
  type KernelInfo,
  readBandwidth,
} from '../../engine/index.ts';

/** The references run with the engine's thread count, so the ratios compare like with like. */
const sessionOptions = { intraOpNumThreads: defaultThreads() };

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length / 2;
  return Number.isInteger(mid) ? (sorted[mid - 1]! + sorted[mid]!) / 2 : sorted[Math.floor(mid)]!;
}

/** Median wall time of n runs of an async function, in milliseconds (after one warm-up call). */
export async function timeMs(fn: () => Promise<unknown>, repeats = 5): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const start = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(times);
}

/** Bytes of the read reference's buffer: 256 MiB, far beyond any cache. */
const READ_BYTES = 256 << 20;

/**
 * The read reference: the best of `repeats` passes over 256 MiB with the kernel's widest loads on every pool thread
 * (readBandwidth), on huge pages where the engine's weights get them (weight-source.ts), so that a bound made from it
 * is like for like. The best pass: the machine at its quietest.
 */
export function readReference(repeats = 20): { gbPerSecond: number; hugePages: boolean } {
  const buffer = new Float32Array(READ_BYTES / 4);
  const hugePages = adviseHugePages(buffer) > 0;
  return { gbPerSecond: readBandwidth(buffer.fill(1), repeats), hugePages };
}

/** onnxruntime's large float32 MatMul throughput: [n, n] × [n, n] with the right operand an initializer. */
export async function matMulPeak(n = 2048): Promise<{ gflopPerSecond: number; n: number }> {
  const g = new GraphBuilder();
  const a = g.input('a', DataType.FLOAT, [n, n]);
  const b = g.constFloat(new Float32Array(n * n).fill(0.001), [n, n], 'b');
  g.output('c', g.one('MatMul', [a, b]), DataType.FLOAT, [n, n]);
  const session = await ort.InferenceSession.create(g.toBytes('matmul'), sessionOptions);
  const feeds = { a: new ort.Tensor('float32', new Float32Array(n * n).fill(0.5), [n, n]) };
  const ms = await timeMs(() => session.run(feeds));
  await session.release();
  return { gflopPerSecond: (2 * n ** 3) / (ms / 1000) / 1e9, n };
}

/** The loads readBandwidth makes: the addon's widest (its kernel's vectors, or 64-bit words), the fallback's 32-bit. */
export function readLoads(info: KernelInfo): string {
  if (!info.native) return '32-bit (JavaScript)';
  return info.isa === 'portable' ? '64-bit scalar' : info.isa === 'avx2' ? '256-bit' : '512-bit';
}
