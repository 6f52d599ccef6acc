// Machine references measured in the same run as a benchmark: memory read bandwidth and onnxruntime's MatMul peak.
import * as ort from 'onnxruntime-node';
import { DataType, GraphBuilder } from '../../service/model/onnx-builder.ts';
import { defaultThreads } from '../../service/model/runtime.ts';

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

/**
 * Read bandwidth as onnxruntime sees it: ReduceSum over a 1 GiB float32 initializer (every byte read once,
 * with onnxruntime's own threads), the same access pattern as a decode step streaming its weights.
 */
export async function memoryReadBandwidth(bytes = 1 << 30): Promise<{ gbPerSecond: number; bytes: number }> {
  const g = new GraphBuilder();
  const elements = bytes / 4;
  const rows = 8192;
  const x = g.input('x', DataType.FLOAT, [rows, elements / rows]);
  g.output('y', g.one('ReduceSum', [x], { keepdims: { i: 0 } }), DataType.FLOAT, []);
  const session = await ort.InferenceSession.create(g.toBytes('bandwidth'), sessionOptions);
  const data = new Float32Array(elements).fill(1);
  const feeds = { x: new ort.Tensor('float32', data, [rows, elements / rows]) };
  const ms = await timeMs(() => session.run(feeds));
  await session.release();
  return { gbPerSecond: bytes / (ms / 1000) / 1e9, bytes };
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
