// npx iwibench bench kernel [--models gemma-3-1b,gemma-3-4b] [--threads N] [--min-ms 150]
// The BF16 matmul kernel (engine/kernels.ts) on every decoder matrix shape and the tied head of Gemma 3 1B
// and 4B, and on the calls that take several at once as the engine makes them (q, k and v; gate and up): ms per call
// at m = 1 and 8, GB/s of BF16 weights read, the ratio to the read bandwidth measured in the same run with wide loads
// on all threads (before each shape, and at start and end), GFLOP/s at m = 8; the JavaScript fallback's rates and
// widenBf16's rate. The decode-step sums add every layer's calls and the head once: as the engine makes them, and
// with one call per matrix. A layer's calls on every product path the machine runs (portable, AVX2, AVX-512, AMX) in
// both precisions, GFLOP/s at 1, 8, 16, 128 and 512 rows, each
// against its instruction's peak measured in the same run (engine/kernels.ts peakRate), beside onnxruntime's float32
// MatMul reference (`bench machine`) at start and end.
import os from 'node:os';
import {
  adviseHugePages,
  jsKernels,
  type KernelImpl,
  kernelInfo,
  matmulBf16,
  matmulBf16Parts,
  nativeKernels,
  peakRate,
  type PeakKind,
  products,
  readBandwidth,
  setKernelThreads,
  useIsa,
  widenBf16,
} from '../../engine/index.ts';
import { parseFlags } from '../args.ts';
import { benchHeader } from './header.ts';
import { readLoads } from './reference.ts';
import { machineNow } from './machine.ts';

const defaults = { models: 'gemma-3-1b,gemma-3-4b', threads: os.availableParallelism(), 'min-ms': 150 };

/**
 * One call: a matrix [n, k], or several of the same k taken in one call (`parts`: their n). `step`: the decode-step
 * sums it counts in: the engine's calls, one call per matrix, or both.
 */
type Shape = { name: string; parts: number[]; k: number; perLayer: boolean; step: 'engine' | 'per-matrix' | 'both' };
const VOCAB = 262_144;
const MODELS: Record<string, { layers: number; shapes: Shape[] }> = {
  'gemma-3-1b': { layers: 26, shapes: shapes({ hidden: 1152, intermediate: 6912, q: 1024, kv: 256 }) },
  'gemma-3-4b': { layers: 34, shapes: shapes({ hidden: 2560, intermediate: 10240, q: 2048, kv: 1024 }) },
};
/** Weights are rotated over copies of at least this many bytes in all, so that no call finds them in cache. */
const ROTATION_BYTES = 256 << 20;

function shapes(d: { hidden: number; intermediate: number; q: number; kv: number }): Shape[] {
  const layer = (name: string, parts: number[], k: number, step: Shape['step']): Shape => ({
    name,
    parts,
    k,
    perLayer: true,
    step,
  });
  return [
    layer('q_proj', [d.q], d.hidden, 'per-matrix'),
    layer('k_proj', [d.kv], d.hidden, 'per-matrix'),
    layer('v_proj', [d.kv], d.hidden, 'per-matrix'),
    layer('q_proj+k_proj+v_proj', [d.q, d.kv, d.kv], d.hidden, 'engine'),
    layer('o_proj', [d.hidden], d.q, 'both'),
    layer('gate_proj', [d.intermediate], d.hidden, 'per-matrix'),
    layer('up_proj', [d.intermediate], d.hidden, 'per-matrix'),
    layer('gate_proj+up_proj', [d.intermediate, d.intermediate], d.hidden, 'engine'),
    layer('down_proj', [d.hidden], d.intermediate, 'both'),
    { name: 'lm_head', parts: [VOCAB], k: d.hidden, perLayer: false, step: 'both' },
  ];
}

/** BF16 weights of moderate magnitude (a hash of the index), every page written so none is the shared zero page. */
function weights(count: number, seed: number): Uint16Array {
  const w = new Uint16Array(count);
  adviseHugePages(w); // as the engine's weights are (weight-source.ts), and the read reference's buffer
  for (let i = 0; i < count; i++) w[i] = 0x3c00 | ((Math.imul(i + seed, 0x9e3779b1) >>> 22) & 0x3ff) | ((i & 1) << 15);
  return w;
}

/**
 * Median over 3 windows of ≥ minMs of ms per call, in wall time and in the process's CPU time; each call takes the
 * next copy of the weights. On a shared machine CPU time with --threads 1 is the figure other work disturbs least.
 */
function msPerCall(call: (copy: number) => void, copies: number, minMs: number): { ms: number; cpuMs: number } {
  for (let c = 0; c < copies; c++) call(c); // warm-up: one pass over every copy
  const windows: { ms: number; cpuMs: number }[] = [];
  let next = 0;
  for (let w = 0; w < 3; w++) {
    const start = performance.now();
    const cpu = process.cpuUsage();
    let calls = 0;
    while (performance.now() - start < minMs || calls < copies) {
      call(next++ % copies);
      calls++;
    }
    const used = process.cpuUsage(cpu);
    windows.push({ ms: (performance.now() - start) / calls, cpuMs: (used.user + used.system) / 1000 / calls });
  }
  return windows.sort((a, b) => a.ms - b.ms)[1]!;
}

/** The read reference in GB/s of wall time and of CPU time (readBandwidth makes repeats + 1 passes). */
function readRates(buffer: Uint16Array, repeats: number): { gbPerSecond: number; cpuGbPerSecond: number } {
  const cpu = process.cpuUsage();
  const gbPerSecond = readBandwidth(buffer, repeats);
  const used = process.cpuUsage(cpu);
  return { gbPerSecond, cpuGbPerSecond: (buffer.byteLength * (repeats + 1)) / ((used.user + used.system) / 1e6) / 1e9 };
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  const models = flags.models.split(',');
  for (const model of models)
    if (!MODELS[model])
      throw new Error(`--models: unknown model "${model}" (known: ${Object.keys(MODELS).join(', ')})`);
  setKernelThreads(flags.threads);
  const info = kernelInfo();
  if (!nativeKernels())
    process.stderr.write(
      `the native kernel is not loaded (${info.reason}): only the fallback's figures are meaningful\n`,
    );
  const minMs = flags['min-ms'];

  const matmulStart = info.amx ? machineNow().matmul_gflop_per_s : undefined;
  process.stderr.write('read bandwidth reference …\n');
  const readBuffer = weights(256 << 20, 1); // 512 MiB, 16× the largest L3 here; measured again at the end
  const readStart = readRates(readBuffer, 5);

  const results: Record<string, unknown> = {};
  for (const model of models) {
    const { layers, shapes } = MODELS[model]!;
    const rows: Record<string, unknown>[] = [];
    const stepMs = { engine: { m1: 0, m8: 0 }, 'per-matrix': { m1: 0, m8: 0 } };
    for (const shape of shapes) {
      const n = shape.parts.reduce((a, b) => a + b);
      const bytes = n * shape.k * 2;
      const copies = Math.max(1, Math.ceil(ROTATION_BYTES / bytes));
      process.stderr.write(
        `${model} ${shape.name} [${shape.parts.join(' + ')}, ${shape.k}] (${copies} cop${copies === 1 ? 'y' : 'ies'}) …\n`,
      );
      const ws = Array.from({ length: copies }, (_, c) => shape.parts.map((part, p) => weights(part * shape.k, c + p)));
      // The machine is shared: the bandwidth measured right before each shape is the fair reference for it.
      const readNow = readRates(readBuffer, 3);
      const row: Record<string, unknown> = {
        name: shape.name,
        n,
        ...(shape.parts.length > 1 ? { parts: shape.parts } : {}),
        k: shape.k,
        mib: bytes / 2 ** 20,
        read_gb_per_s: readNow.gbPerSecond,
        read_gb_per_s_cpu: readNow.cpuGbPerSecond,
      };
      for (const m of [1, 8]) {
        const x = Float32Array.from({ length: m * shape.k }, (_, i) => Math.sin(i));
        const outs = shape.parts.map((part) => new Float32Array(m * part));
        const { ms, cpuMs } = msPerCall((c) => matmulBf16Parts(x, ws[c]!, outs, m, shape.k), copies, minMs);
        const gbPerSecond = bytes / (ms / 1000) / 1e9;
        const cpuGbPerSecond = bytes / (cpuMs / 1000) / 1e9;
        row[`m${m}`] = {
          ms,
          cpu_ms: cpuMs,
          gb_per_s: gbPerSecond,
          vs_read_bandwidth: gbPerSecond / readNow.gbPerSecond,
          vs_read_bandwidth_cpu: cpuGbPerSecond / readNow.cpuGbPerSecond,
          ...(m === 8 ? { gflop_per_s: (2 * m * n * shape.k) / (ms / 1000) / 1e9 } : {}),
        };
        for (const step of ['engine', 'per-matrix'] as const)
          if (shape.step === step || shape.step === 'both')
            stepMs[step][m === 1 ? 'm1' : 'm8'] += ms * (shape.perLayer ? layers : 1);
      }
      rows.push(row);
    }
    results[model] = {
      layers,
      shapes: rows,
      product_paths: pathRates(shapes, minMs),
      matmul_ms_per_decode_step: stepMs.engine,
      matmul_ms_per_decode_step_one_call_per_matrix: stepMs['per-matrix'],
    };
  }

  process.stderr.write('widenBf16 …\n');
  const wideCount = 10240 * 2560;
  const wideIn = weights(wideCount, 3);
  const wideOut = new Float32Array(wideCount).fill(1);
  const widenMs = msPerCall(() => widenBf16(wideIn, wideOut), 1, minMs).ms;

  process.stderr.write('the JavaScript fallback (a slice of each shape) …\n');
  const fallback = fallbackRates(jsKernels, minMs);

  process.stderr.write('read bandwidth reference again …\n');
  const readEnd = readRates(readBuffer, 5);
  const matmulEnd = info.amx ? machineNow().matmul_gflop_per_s : undefined;
  const report = {
    ...benchHeader('kernel', { ...flags, threads: info.threads }),
    kernel: info,
    reference: {
      read_gb_per_s: readStart.gbPerSecond,
      read_gb_per_s_at_end: readEnd.gbPerSecond,
      ...(info.amx ? { matmul_gflop_per_s: matmulStart, matmul_gflop_per_s_at_end: matmulEnd } : {}),
      how: `readBandwidth: 512 MiB, ${readLoads(info)} loads on every pool thread, best of 5`,
    },
    models: results,
    widen_bf16: {
      elements: wideCount,
      ms: widenMs,
      gb_per_s_read_and_written: (wideCount * 6) / (widenMs / 1000) / 1e9,
    },
    fallback,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

/** The fallback is single-threaded and slow: its rate on the first rows of two shapes (about 1M weights each). */
function fallbackRates(impl: KernelImpl, minMs: number): Record<string, unknown> {
  const rates: Record<string, unknown> = {};
  for (const [name, k] of [
    ['gemma-3-1b gate_proj', 1152],
    ['gemma-3-4b gate_proj', 2560],
  ] as const) {
    const n = Math.ceil((1 << 20) / k);
    const w = weights(n * k, 5);
    const rate: Record<string, number> = { n, k };
    for (const m of [1, 8]) {
      const x = Float32Array.from({ length: m * k }, (_, i) => Math.cos(i));
      const out = new Float32Array(m * n);
      const { ms } = msPerCall(() => matmulBf16(x, w, out, m, n, k, impl), 1, minMs);
      rate[`m${m}_gb_per_s`] = (n * k * 2) / (ms / 1000) / 1e9;
      if (m === 8) rate.m8_gflop_per_s = (2 * m * n * k) / (ms / 1000) / 1e9;
    }
    rates[name] = rate;
  }
  return rates;
}

/**
 * Every product path this machine runs, in both precisions (float32 on AMX is AVX-512's), with the instruction kind
 * whose peak bounds it; each call takes its path first (useIsa), and the path in force is restored after.
 */
function productPaths(): { name: string; peak: PeakKind; run: typeof matmulBf16Parts }[] {
  const info = kernelInfo();
  const on =
    (isa: string, bf16: boolean) =>
    (x: Float32Array, ws: Uint16Array[], outs: Float32Array[], m: number, k: number) => {
      useIsa(isa);
      products(x, ws, outs, m, k, { bf16, roundOutput: bf16 });
    };
  return info.available.flatMap((isa) => [
    ...(isa === 'amx' ? [] : [{ name: `float32 ${isa}`, peak: 'fma' as const, run: on(isa, false) }]),
    { name: `bf16 ${isa}`, peak: isa === 'amx' ? ('amx' as const) : ('fma' as const), run: on(isa, true) },
  ]);
}

/**
 * A layer's calls as the engine makes them (not the head), on every product path this machine runs, in both
 * precisions: GFLOP/s at 1, 8, 16, 128 and 512 rows, weights
 * rotated as for decode, and each as a fraction of its instruction's peak measured in the same run (peakRate:
 * register to register on every thread, before and after; the better of the two).
 */
function pathRates(shapes: Shape[], minMs: number) {
  const inForce = kernelInfo().isa;
  const paths = productPaths();
  const peakKinds = [...new Set(paths.map((path) => path.peak))];
  const measurePeaks = () => Object.fromEntries(peakKinds.map((kind) => [kind, peakRate(kind) ?? 0]));
  const peaksBefore = measurePeaks();
  const rates: Record<string, Record<string, Record<string, { gflop_per_s: number; vs_peak: number }>>> = {};
  const raw: [string, string, string, number, PeakKind][] = [];
  for (const shape of shapes.filter((s) => s.perLayer && s.step !== 'per-matrix')) {
    const n = shape.parts.reduce((a, b) => a + b);
    const copies = Math.max(1, Math.ceil(ROTATION_BYTES / (n * shape.k * 2)));
    process.stderr.write(`${shape.name}, every product path …\n`);
    const ws = Array.from({ length: copies }, (_, c) => shape.parts.map((part, p) => weights(part * shape.k, c + p)));
    for (const m of [1, 8, 16, 128, 512]) {
      const x = Float32Array.from({ length: m * shape.k }, (_, i) => Math.sin(i));
      const outs = shape.parts.map((part) => new Float32Array(m * part));
      for (const path of paths) {
        const { ms } = msPerCall((c) => path.run(x, ws[c]!, outs, m, shape.k), copies, minMs);
        raw.push([shape.name, `m${m}`, path.name, (2 * m * n * shape.k) / (ms / 1000) / 1e9, path.peak]);
      }
    }
  }
  if (inForce !== 'javascript') useIsa(inForce);
  const peaksAfter = measurePeaks();
  const peaks = Object.fromEntries(peakKinds.map((kind) => [kind, Math.max(peaksBefore[kind]!, peaksAfter[kind]!)]));
  for (const [shape, rows, path, gflops, peak] of raw) {
    ((rates[shape] ??= {})[rows] ??= {})[path] = { gflop_per_s: gflops, vs_peak: gflops / peaks[peak]! };
  }
  return { peak_gflop_per_s: { before: peaksBefore, after: peaksAfter }, gflop_per_s: rates };
}
