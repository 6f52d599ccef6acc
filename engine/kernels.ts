// The engine's kernels: the native addon built from engine/native/ at npm ci, or, where it was not built (no compiler,
// another OS) or IWIBENCH_NATIVE=0 is set, the JavaScript fallback (kernels-fallback.ts). Every path gives the same
// bits: the addon's portable, AVX2, AVX-512 and AMX paths and the fallback compute each op in one order
// (engine/native/arithmetic.h), so a result depends on neither the machine, the path, the batch nor the threads. The
// addon chooses its path once at load, from what the CPU has (its dispatch record, kernelInfo()); IWIBENCH_ISA
// chooses a lower one. This file chooses the implementation and checks every call's arguments.
import { existsSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IwiError } from '../core/errors.ts';
import { jsKernels, type KernelImpl } from './kernels-fallback.ts';

export { argmax, fmaF32, jsKernels, roundBf16Bits, roundToBf16, type KernelImpl } from './kernels-fallback.ts';

/** The instruction kinds peakRate measures: float32 FMA on the path's widest vectors, AMX's TDPBF16PS. */
export type PeakKind = 'fma' | 'amx';

/** The addon's paths, lowest first; 'javascript' is the fallback. */
export const ISAS = ['portable', 'avx2', 'avx512', 'amx'] as const;
export type Isa = (typeof ISAS)[number];

/** The addon's dispatch record: the path in force, the ones this CPU runs, and AMX's status ("used", or why not). */
type Dispatch = { isa: Isa; available: Isa[]; amx: string };

type NativeAddon = KernelImpl & {
  gatedProducts(
    x: Float32Array,
    gate: Uint16Array,
    up: Uint16Array,
    z: Float32Array,
    m: number,
    k: number,
    roundOutput: boolean,
  ): void;
  /** GFLOP/s of one instruction kind on every pool thread, register to register (0: AMX not in force). */
  peakRate(kind: PeakKind, iterations: number, repeats: number): number;
  dispatch(): Dispatch;
  useIsa(isa: string): void;
  setThreads(threads: number): void;
  threads(): number;
  adviseHugePages(view: ArrayBufferView): number;
  readFileInto(fd: number, position: number, bytes: Uint8Array): number;
};

/**
 * What computes: the addon's path (or the fallback), every path this CPU runs, and which path each op takes. The
 * arithmetic is the same whichever (engine/arithmetic.ts names it); the record says how fast.
 */
export type KernelInfo = {
  native: boolean;
  /** Why the addon is not loaded. */
  reason?: string;
  threads: number;
  isa: Isa | 'javascript';
  available: (Isa | 'javascript')[];
  /** AMX: "used", or why not (no AMX-BF16, no tile state from the OS, or its sums differ on the load-time probe). */
  amx: string;
  /** The path each op takes: bf16 precision's products on AMX where it is in force, everything else on `isa`. */
  paths: { productsBf16: string; productsFloat32: string; attention: string; pointwise: string };
};

const ADDON_PATH = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'native/build/Release/iwibench_kernels.node',
);

// ---------------------------------------------------------------------------------------------------------------
// Choosing the implementation.

export type Selection = { impl: KernelImpl; addon?: NativeAddon; reason?: string; notice?: string };

/**
 * The addon at `addonPath` unless env.IWIBENCH_NATIVE is '0'; the fallback (with a notice if the addon is missing).
 * env.IWIBENCH_ISA (portable, avx2, avx512 or amx) makes the addon take that path; one above what the CPU runs is an
 * error, not a quiet fallback.
 */
export function selectKernels(env: NodeJS.ProcessEnv, addonPath: string): Selection {
  if (env.IWIBENCH_NATIVE === '0') return { impl: jsKernels, reason: 'IWIBENCH_NATIVE=0' };
  let reason = '';
  let addon: NativeAddon | undefined;
  if (!existsSync(addonPath)) {
    reason = `${path.relative(process.cwd(), addonPath) || addonPath} is missing`;
  } else {
    try {
      addon = createRequire(import.meta.url)(addonPath) as NativeAddon;
    } catch (error) {
      reason = `loading it failed: ${(error as Error).message.split('\n')[0]}`;
    }
  }
  if (addon) {
    addon.setThreads(os.availableParallelism());
    if (env.IWIBENCH_ISA) useIsaOf(addon, env.IWIBENCH_ISA);
    return { impl: addon, addon };
  }
  if (env.IWIBENCH_ISA)
    throw new IwiError(
      'ENGINE_SETTING_INVALID',
      `IWIBENCH_ISA=${env.IWIBENCH_ISA}, but the native addon is not loaded (${reason})`,
    );
  const notice = `iwibench: native BF16 kernel not available (${reason}); using the JavaScript fallback (slow; run npm ci to build it)`;
  return { impl: jsKernels, reason, notice };
}

let chosen: Selection | undefined;

/** The implementation of this process, chosen on first use (not at import: a command that never multiplies loads no addon). */
function selection(): Selection {
  if (!chosen) {
    chosen = selectKernels(process.env, ADDON_PATH);
    if (chosen.notice) process.stderr.write(`${chosen.notice}\n`);
  }
  return chosen;
}

/** The addon itself (for tests and the benchmark to compare it with the fallback); undefined when not loaded. */
export function nativeKernels(): KernelImpl | undefined {
  return selection().addon;
}

function useIsaOf(addon: NativeAddon, isa: string): void {
  try {
    addon.useIsa(isa);
  } catch (error) {
    throw new IwiError('ENGINE_SETTING_INVALID', (error as Error).message);
  }
}

/**
 * Makes the addon take another path for every later call (tests and benchmarks run each path the CPU has in one
 * process; IWIBENCH_ISA does it at load). Throws ENGINE_SETTING_INVALID above what the CPU runs, or without the addon.
 */
export function useIsa(isa: string): void {
  const { addon, reason } = selection();
  if (!addon) throw new IwiError('ENGINE_SETTING_INVALID', `no native addon to take ${isa} (${reason})`);
  useIsaOf(addon, isa);
}

/** The dispatch record: which path computes here, and which path each op takes. */
export function kernelInfo(): KernelInfo {
  const { addon, reason } = selection();
  if (!addon) {
    const everywhere = {
      productsBf16: 'javascript',
      productsFloat32: 'javascript',
      attention: 'javascript',
      pointwise: 'javascript',
    };
    return {
      native: false,
      reason,
      threads: 1,
      isa: 'javascript',
      available: ['javascript'],
      amx: 'the native addon is not loaded',
      paths: everywhere,
    };
  }
  const { isa, available, amx } = addon.dispatch();
  const vectors = isa === 'amx' ? 'avx512' : isa;
  return {
    native: true,
    threads: addon.threads(),
    isa,
    available,
    amx,
    paths: { productsBf16: isa, productsFloat32: vectors, attention: vectors, pointwise: vectors },
  };
}

/** Threads of the addon's pool (default os.availableParallelism()); the fallback is single-threaded and ignores it. */
export function setKernelThreads(threads: number): void {
  if (!Number.isInteger(threads) || threads < 1 || threads > 1024)
    throw new RangeError(`kernel threads must be an integer in [1, 1024], got ${threads}`);
  selection().addon?.setThreads(threads);
}

// ---------------------------------------------------------------------------------------------------------------
// The checked entry points the engine calls. Calls are synchronous; nothing is written unless every check passes.

function dimension(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1 || value >= 2 ** 31)
    throw new RangeError(`${name} must be an integer in [1, 2^31), got ${value}`);
}

function disjoint(a: ArrayBufferView, b: ArrayBufferView): boolean {
  if (a.buffer !== b.buffer) return true;
  return a.byteOffset + a.byteLength <= b.byteOffset || b.byteOffset + b.byteLength <= a.byteOffset;
}

/** Checks the arguments of a product call (named `fn`); throws TypeError/RangeError. */
function checkMatmulArgs(x: unknown, ws: unknown, outs: unknown, m: number, k: number, fn = 'matmulBf16'): void {
  if (!(x instanceof Float32Array)) throw new TypeError(`${fn}: x must be a Float32Array`);
  if (!Array.isArray(ws) || !Array.isArray(outs) || ws.length === 0 || ws.length !== outs.length)
    throw new TypeError(`${fn}: ws and outs must be arrays of the same length, at least 1`);
  dimension(`${fn}: m`, m);
  dimension(`${fn}: k`, k);
  if (x.length !== m * k) throw new RangeError(`${fn}: x.length ${x.length} ≠ m·k = ${m}·${k}`);
  for (const [p, w] of (ws as unknown[]).entries()) {
    const out: unknown = outs[p];
    if (!(w instanceof Uint16Array)) throw new TypeError(`${fn}: w must be a Uint16Array of BF16 bits`);
    if (!(out instanceof Float32Array)) throw new TypeError(`${fn}: out must be a Float32Array`);
    const n = w.length / k;
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`${fn}: w.length ${w.length} is not n·k for k = ${k}`);
    if (out.length !== m * n) throw new RangeError(`${fn}: out.length ${out.length} ≠ m·n = ${m}·${n}`);
  }
  for (const [p, out] of (outs as Float32Array[]).entries()) {
    if (!disjoint(out, x) || (ws as Uint16Array[]).some((w) => !disjoint(out, w)))
      throw new TypeError(`${fn}: out must not share memory with x or w`);
    if (outs.some((other: Float32Array, q) => q !== p && !disjoint(out, other)))
      throw new TypeError(`${fn}: outs must not share memory`);
  }
}

/**
 * out[m×n] = x[m×k] · Wᵀ, W [n×k] BF16 bits row-major (a safetensors tensor [out_features, in_features]), in float32
 * precision's arithmetic (products below). out[r, j] depends only on x's row r and W's row j.
 */
export function matmulBf16(
  x: Float32Array,
  w: Uint16Array,
  out: Float32Array,
  m: number,
  n: number,
  k: number,
  impl = selection().impl,
): void {
  checkMatmulArgs(x, [w], [out], m, k);
  dimension('matmulBf16: n', n);
  if (w.length !== n * k) throw new RangeError(`matmulBf16: w.length ${w.length} ≠ n·k = ${n}·${k}`);
  impl.products(x, [w], [out], m, k, false, false);
}

/** How products computes: bf16 precision's arithmetic (x rounded to BF16, denormals flushed), outputs rounded. */
export type ProductMode = { bf16: boolean; roundOutput: boolean };

/**
 * outs[p] = x · ws[p]ᵀ for several weights of one x in one call (a layer's q, k and v; gate and up), each output in
 * the tile order (engine/native/arithmetic.h): k in blocks of 32, per block the even and odd k in chains of fused
 * multiply-adds, their sum added to the output's accumulator. In bf16 precision x is rounded to BF16 first and the
 * sums flush denormals, as AMX's tile unit computes (which takes these products where it is in force); roundOutput
 * rounds the outputs to BF16. Bit for bit one call per weight, and each row alone.
 */
export function products(
  x: Float32Array,
  ws: Uint16Array[],
  outs: Float32Array[],
  m: number,
  k: number,
  mode: ProductMode,
  impl = selection().impl,
): void {
  checkMatmulArgs(x, ws, outs, m, k, 'products');
  if (typeof mode?.bf16 !== 'boolean' || typeof mode.roundOutput !== 'boolean')
    throw new TypeError('products: mode must be { bf16: boolean, roundOutput: boolean }');
  impl.products(x, ws, outs, m, k, mode.bf16, mode.roundOutput);
}

/** products in float32 precision (the benchmarks' and tests' matmul). */
export function matmulBf16Parts(
  x: Float32Array,
  ws: Uint16Array[],
  outs: Float32Array[],
  m: number,
  k: number,
  impl = selection().impl,
): void {
  products(x, ws, outs, m, k, { bf16: false, roundOutput: false }, impl);
}

/** Whether gatedProducts runs here: bf16 precision's products on AMX's tile unit. */
export function gatedProductsHere(): boolean {
  return kernelInfo().isa === 'amx';
}

/**
 * z [m × n] = gelu_tanh(x · gateᵀ) · (x · upᵀ) in bf16 precision on AMX (where gatedProductsHere()): the two products
 * as products(x, [gate, up], …) writes them, then gatedGelu, bit for bit; but each block of both is multiplied in one
 * work item and only z is written, so the two [m × n] products never go through memory.
 */
export function gatedProducts(
  x: Float32Array,
  gate: Uint16Array,
  up: Uint16Array,
  z: Float32Array,
  m: number,
  k: number,
  roundOutput: boolean,
): void {
  checkMatmulArgs(x, [gate], [z], m, k, 'gatedProducts');
  if (!(up instanceof Uint16Array) || up.length !== gate.length)
    throw new RangeError(`gatedProducts: up must be a Uint16Array as long as gate (${gate.length})`);
  if (!disjoint(z, up)) throw new TypeError('gatedProducts: z must not share memory with up');
  if (typeof roundOutput !== 'boolean') throw new TypeError('gatedProducts: roundOutput must be a boolean');
  const { addon } = selection();
  if (!addon || !gatedProductsHere()) throw new Error(`gatedProducts: AMX is not in force here (${kernelInfo().amx})`);
  addon.gatedProducts(x, gate, up, z, m, k, roundOutput);
}

/**
 * GFLOP/s of one instruction kind on every pool thread, register to register, the best of `repeats` passes: the
 * ceiling the products are measured against (0 for 'amx' where AMX is not in force; undefined without the addon).
 */
export function peakRate(kind: PeakKind, iterations = 200_000, repeats = 3): number | undefined {
  return selection().addon?.peakRate(kind, iterations, repeats);
}

/** One row of a decode step's attention: its cache's past for the layer and the position its new token has. */
export type DecodeAttentionRow = {
  /** Keys and values [kvHeads, S, D] (the cache's buffers for the layer, read where they lie). */
  pastKey: Float32Array;
  pastValue: Float32Array;
  /** The position each of the S slots holds (−1: never attended). */
  slots: Int32Array;
  position: number;
};

/** The attention's shape: heads, KV heads, head_dim, the score scaling, and the sliding window (0: full attention). */
export type DecodeAttentionShape = {
  heads: number;
  kvHeads: number;
  headDim: number;
  scaling: number;
  window: number;
  /** Each probability rounded to BF16 before it weighs the values (bf16 precision, as HF's BF16 attention casts them). */
  bf16Probabilities?: boolean;
};

/** The attention shape both attention kernels take: dimensions ≥ 1, GQA heads, a finite scaling, a window ≥ 0. */
function checkAttentionShape(
  kernel: string,
  { heads, kvHeads, headDim, scaling, window, bf16Probabilities }: DecodeAttentionShape,
): void {
  for (const [name, value] of [
    ['heads', heads],
    ['kvHeads', kvHeads],
    ['headDim', headDim],
  ] as const)
    dimension(`${kernel}: ${name}`, value);
  if (heads % kvHeads !== 0) throw new RangeError(`${kernel}: heads ${heads} is not a multiple of kvHeads ${kvHeads}`);
  if (!Number.isFinite(scaling)) throw new RangeError(`${kernel}: scaling must be finite, got ${scaling}`);
  if (!Number.isInteger(window) || window < 0 || window >= 2 ** 31)
    throw new RangeError(`${kernel}: window must be an integer ≥ 0, got ${window}`);
  if (bf16Probabilities !== undefined && typeof bf16Probabilities !== 'boolean')
    throw new TypeError(`${kernel}: bf16Probabilities must be a boolean`);
}

/**
 * Decode attention for rows of one new token each, each over its own cache: out [R, heads·D] from the rows' queries
 * [R, heads·D] and new keys and values [R, kvHeads·D] (queries and keys already normed and rotated). A slot is
 * attended when its position is ≥ 0, at most the row's, and within the window; the row's own key always. Each output
 * depends only on its own row (engine/native/attention.h gives the order: the cache's keys by ascending position,
 * e^t in the GELU's float steps); every path equals the fallback bit for bit.
 */
export function attendDecode(
  queries: Float32Array,
  keys: Float32Array,
  values: Float32Array,
  out: Float32Array,
  rows: DecodeAttentionRow[],
  shape: DecodeAttentionShape,
  impl = selection().impl,
): void {
  const { heads, kvHeads, headDim: D, scaling, window } = shape;
  checkAttentionShape('attendDecode', shape);
  const R = rows.length;
  if (R === 0) throw new RangeError('attendDecode: rows must hold at least one row');
  for (const [name, array, width] of [
    ['queries', queries, heads * D],
    ['keys', keys, kvHeads * D],
    ['values', values, kvHeads * D],
    ['out', out, heads * D],
  ] as const) {
    if (!(array instanceof Float32Array)) throw new TypeError(`attendDecode: ${name} must be a Float32Array`);
    if (array.length !== R * width)
      throw new RangeError(`attendDecode: ${name}.length ${array.length} ≠ ${R}·${width}`);
  }
  for (const row of rows) {
    if (
      !(row.pastKey instanceof Float32Array) ||
      !(row.pastValue instanceof Float32Array) ||
      !(row.slots instanceof Int32Array)
    )
      throw new TypeError('attendDecode: a row needs Float32Array pastKey and pastValue and Int32Array slots');
    const size = kvHeads * row.slots.length * D;
    if (row.pastKey.length !== size || row.pastValue.length !== size)
      throw new RangeError(`attendDecode: a row's pastKey and pastValue must hold kvHeads·S·D = ${size} floats`);
    if (!Number.isInteger(row.position) || row.position < 0 || row.position >= 2 ** 31)
      throw new RangeError(`attendDecode: a row's position must be an integer ≥ 0, got ${row.position}`);
  }
  const inputs = [queries, keys, values, ...rows.flatMap((row) => [row.pastKey, row.pastValue])];
  if (inputs.some((input) => !disjoint(out, input)))
    throw new TypeError('attendDecode: out must not share memory with the inputs');
  impl.attendDecode(
    queries,
    keys,
    values,
    out,
    rows.map((row) => row.pastKey),
    rows.map((row) => row.pastValue),
    rows.map((row) => row.slots),
    Int32Array.from(rows, (row) => row.position),
    heads,
    kvHeads,
    D,
    Math.fround(scaling),
    window,
    shape.bf16Probabilities === true,
  );
}

/** The cache a chunk's queries see besides its own keys: one sequence's past slots, as KvCache.past and heldPositions. */
export type ChunkPast = { key: Float32Array; value: Float32Array; slots: Int32Array };

/**
 * A one-sequence chunk's attention (a prefill): T queries [T × heads × D] at `positions` (≥ 0) over the S past slots
 * of its cache ([kvHeads × S × D], positions `slots`, −1 never attended) and the chunk's own keys and values
 * [T × kvHeads × D] (after q/k norms and RoPE, before they are stored), into out [T × heads × D]. Key j is visible to
 * query t when 0 ≤ p_j ≤ p_t and, on a sliding layer, p_t − p_j < window; GQA without repeating keys. Each score is a
 * dot product summed over head_dim in order with fused multiply-adds (engine/native/attention.h gives every step);
 * every path equals the fallback bit for bit, and the attention graph within float32 rounding.
 */
export function attendChunk(
  queries: Float32Array,
  keys: Float32Array,
  values: Float32Array,
  out: Float32Array,
  past: ChunkPast,
  positions: Int32Array,
  shape: DecodeAttentionShape,
  impl = selection().impl,
): void {
  const { heads, kvHeads, headDim: D, scaling, window } = shape;
  checkAttentionShape('attendChunk', shape);
  if (!(positions instanceof Int32Array) || !(past.slots instanceof Int32Array))
    throw new TypeError('attendChunk: positions and past.slots must be Int32Arrays');
  const T = positions.length;
  if (T === 0 || positions.some((p) => p < 0))
    throw new RangeError('attendChunk: positions must hold at least one position, each ≥ 0');
  for (const [name, array, width] of [
    ['queries', queries, heads * D],
    ['keys', keys, kvHeads * D],
    ['values', values, kvHeads * D],
    ['out', out, heads * D],
  ] as const) {
    if (!(array instanceof Float32Array)) throw new TypeError(`attendChunk: ${name} must be a Float32Array`);
    if (array.length !== T * width) throw new RangeError(`attendChunk: ${name}.length ${array.length} ≠ ${T}·${width}`);
  }
  const size = kvHeads * past.slots.length * D;
  if (!(past.key instanceof Float32Array) || !(past.value instanceof Float32Array))
    throw new TypeError('attendChunk: past.key and past.value must be Float32Arrays');
  if (past.key.length !== size || past.value.length !== size)
    throw new RangeError(`attendChunk: past.key and past.value must hold kvHeads·S·D = ${size} floats`);
  if ([queries, keys, values, past.key, past.value].some((input) => !disjoint(out, input)))
    throw new TypeError('attendChunk: out must not share memory with the inputs');
  const args = [heads, kvHeads, D, Math.fround(scaling), window, shape.bf16Probabilities === true] as const;
  impl.attendChunk(queries, keys, values, out, past.key, past.value, past.slots, positions, ...args);
}

/**
 * The end of a layer's sublayer and the next one's norm (Gemma3DecoderLayer), for rows = h.length / H of H =
 * post.length floats: h += a normed by post (h updated in place: the residual stream; rounded to BF16 when
 * `roundResidual`, as bf16 precision keeps it), then y = h normed by next. Gemma3RMSNorm's x · (1 / √(mean(x²) +
 * eps)) · scale with scale = 1 + w, the sum of squares in the 8-lane order of a dot product and h's add fused with its last product;
 * each row on its own, so a batch gives each row alone.
 */
export function residualNorm(
  h: Float32Array,
  a: Float32Array,
  post: Float32Array,
  next: Float32Array,
  y: Float32Array,
  eps: number,
  roundResidual = false,
  impl = selection().impl,
): void {
  for (const [name, array] of Object.entries({ h, a, post, next, y }))
    if (!(array instanceof Float32Array)) throw new TypeError(`residualNorm: ${name} must be a Float32Array`);
  const H = post.length;
  if (H === 0 || next.length !== H) throw new RangeError('residualNorm: post and next must hold the same H ≥ 1 floats');
  if (h.length === 0 || h.length % H !== 0 || a.length !== h.length || y.length !== h.length)
    throw new RangeError(`residualNorm: h, a and y must hold the same rows·H floats (H = ${H}, rows ≥ 1)`);
  if (!Number.isFinite(eps) || eps < 0)
    throw new RangeError(`residualNorm: eps must be a finite number ≥ 0, got ${eps}`);
  if ([h, a, post, next].some((input) => !disjoint(y, input)) || [a, post, next].some((input) => !disjoint(h, input)))
    throw new TypeError('residualNorm: h and y must not share memory with each other or the other inputs');
  if (typeof roundResidual !== 'boolean') throw new TypeError('residualNorm: roundResidual must be a boolean');
  impl.residualNorm(h, a, post, next, y, Math.fround(eps), roundResidual);
}

/**
 * Gemma3RMSNorm of every row of x [rows × H] into y, H = scale.length (scale = 1 + w): x · (1 / √(mean(x²) + eps)) ·
 * scale, the sum of squares in residualNorm's order; the first layer's input norm, which no residual precedes.
 */
export function rmsNorm(
  x: Float32Array,
  scale: Float32Array,
  y: Float32Array,
  eps: number,
  impl = selection().impl,
): void {
  for (const [name, array] of Object.entries({ x, scale, y }))
    if (!(array instanceof Float32Array)) throw new TypeError(`rmsNorm: ${name} must be a Float32Array`);
  const H = scale.length;
  if (H === 0 || x.length === 0 || x.length % H !== 0 || y.length !== x.length)
    throw new RangeError(`rmsNorm: x and y must hold the same rows·H floats (H = ${H} ≥ 1, rows ≥ 1)`);
  if (!Number.isFinite(eps) || eps < 0) throw new RangeError(`rmsNorm: eps must be a finite number ≥ 0, got ${eps}`);
  if (!disjoint(y, x) || !disjoint(y, scale)) throw new TypeError('rmsNorm: y must not share memory with x or scale');
  impl.rmsNorm(x, scale, y, Math.fround(eps));
}

/**
 * Gemma3Attention's q_norm or k_norm and then its RoPE, in place on x [rows × heads × D] (D = scale.length, even):
 * each head normed as Gemma3RMSNorm (scale = 1 + w, the sum of squares in the 8-lane order of a dot product), then rotated by its
 * row's cos and sin [rows × D/2] as apply_rotary_pos_emb with rotate_half. Each product and sum is rounded to float32
 * in the addon's order (engine/native/pointwise.h), the same bits in both; within float32 rounding of the graphs'
 * RMSNormalization and RotaryEmbedding (the device path's).
 */
export function normRope(
  x: Float32Array,
  scale: Float32Array,
  cos: Float32Array,
  sin: Float32Array,
  heads: number,
  eps: number,
  impl = selection().impl,
): void {
  for (const [name, array] of Object.entries({ x, scale, cos, sin }))
    if (!(array instanceof Float32Array)) throw new TypeError(`normRope: ${name} must be a Float32Array`);
  dimension('normRope: heads', heads);
  const D = scale.length;
  if (D === 0 || D % 2 !== 0 || cos.length === 0 || cos.length % (D / 2) !== 0 || sin.length !== cos.length)
    throw new RangeError(`normRope: scale must hold an even D ≥ 2 and cos and sin the same rows·D/2 floats (D = ${D})`);
  if (x.length !== (cos.length / (D / 2)) * heads * D)
    throw new RangeError(`normRope: x.length ${x.length} ≠ rows·heads·D = ${(cos.length / (D / 2)) * heads * D}`);
  if (!Number.isFinite(eps) || eps < 0) throw new RangeError(`normRope: eps must be a finite number ≥ 0, got ${eps}`);
  if ([scale, cos, sin].some((input) => !disjoint(x, input)))
    throw new TypeError('normRope: x must not share memory with scale, cos or sin');
  impl.normRope(x, scale, cos, sin, heads, Math.fround(eps));
}

/**
 * Gemma3MLP's gelu_pytorch_tanh(gate) · up into z, elementwise: x / (1 + e^(−2u)) · up, u = √(2/π)·(x + 0.044715·x³)
 * (engine/native/pointwise.h says how e^t is computed), within float32 rounding of PyTorch's.
 */
export function gatedGelu(gate: Float32Array, up: Float32Array, z: Float32Array, impl = selection().impl): void {
  for (const [name, array] of Object.entries({ gate, up, z }))
    if (!(array instanceof Float32Array)) throw new TypeError(`gatedGelu: ${name} must be a Float32Array`);
  if (gate.length === 0 || up.length !== gate.length || z.length !== gate.length)
    throw new RangeError('gatedGelu: gate, up and z must hold the same number of floats, at least 1');
  if (!disjoint(z, gate) || !disjoint(z, up)) throw new TypeError('gatedGelu: z must not share memory with gate or up');
  impl.gatedGelu(gate, up, z);
}

/**
 * Every float of x rounded in place to the nearest BF16 value (ties to even; ±Inf kept, a finite value past BF16's
 * largest rounds to ±Inf, a NaN stays NaN): the rounding of the engine's bf16 precision, as PyTorch's
 * `tensor.to(torch.bfloat16)`.
 */
export function roundBf16(x: Float32Array, impl = selection().impl): void {
  if (!(x instanceof Float32Array)) throw new TypeError('roundBf16: x must be a Float32Array');
  impl.roundBf16(x);
}

/**
 * The greedy choice of every row of logits [out.length × n] into out: argmax's index (the first of the largest value;
 * NaN never chosen; 0 when no value exceeds −∞). The addon's vector lanes give the same index, its rows shared among
 * the pool's threads: a decode step's 120 rows of 262,144 logits take ~80 ms in JavaScript.
 */
export function argmaxRows(values: Float32Array, n: number, out: Int32Array, impl = selection().impl): void {
  if (!(values instanceof Float32Array)) throw new TypeError('argmaxRows: values must be a Float32Array');
  if (!(out instanceof Int32Array)) throw new TypeError('argmaxRows: out must be an Int32Array');
  if (!Number.isInteger(n) || n < 1 || n >= 2 ** 31 || out.length === 0 || values.length !== out.length * n)
    throw new RangeError(`argmaxRows: values must hold out.length ≥ 1 rows of n ≥ 1 floats (n = ${n})`);
  if (!disjoint(values, out)) throw new TypeError('argmaxRows: out must not share memory with values');
  impl.argmaxRows(values, n, out);
}

/**
 * The head's log-softmax parts of logits [rows × n], whose column 0 is vocabulary id `idBase` (engine/head.ts combines
 * them): per row and per chunk of `chunk` columns, the largest value (chunkMax) and Σ e^(x − max) (chunkSum), into
 * [rows × ⌈n / chunk⌉]; and each row's k largest values and their ids, kept in top and ids [rows × k] across calls
 * (largest first, an equal value after the lower id; start them at −∞ and −1). engine/native/vocab.h gives the steps.
 */
export function vocabPartials(
  logits: Float32Array,
  n: number,
  chunk: number,
  chunkMax: Float32Array,
  chunkSum: Float32Array,
  top: Float32Array,
  ids: Int32Array,
  idBase: number,
  impl = selection().impl,
): void {
  for (const [name, array] of Object.entries({ logits, chunkMax, chunkSum, top }))
    if (!(array instanceof Float32Array)) throw new TypeError(`vocabPartials: ${name} must be a Float32Array`);
  if (!(ids instanceof Int32Array)) throw new TypeError('vocabPartials: ids must be an Int32Array');
  dimension('vocabPartials: n', n);
  dimension('vocabPartials: chunk', chunk);
  if (!Number.isInteger(idBase) || idBase < 0 || idBase + n >= 2 ** 31)
    throw new RangeError(`vocabPartials: idBase must be an integer ≥ 0 with idBase + n below 2^31, got ${idBase}`);
  const rows = logits.length / n;
  const chunks = Math.ceil(n / chunk);
  if (!Number.isInteger(rows) || rows < 1 || chunkMax.length !== rows * chunks || chunkSum.length !== rows * chunks)
    throw new RangeError('vocabPartials: logits must hold rows ≥ 1 of n floats, chunkMax and chunkSum rows·⌈n/chunk⌉');
  if (top.length % rows !== 0 || ids.length !== top.length)
    throw new RangeError('vocabPartials: top and ids must hold rows·k entries each');
  const arrays = [logits, chunkMax, chunkSum, top, ids];
  for (let a = 1; a < arrays.length; a++)
    for (let b = 0; b < a; b++)
      if (!disjoint(arrays[a]!, arrays[b]!))
        throw new TypeError(
          'vocabPartials: chunkMax, chunkSum, top and ids must not share memory with each other or logits',
        );
  impl.vocabPartials(logits, n, chunk, chunkMax, chunkSum, top, ids, idBase);
}

/** out[i] = the float32 value of BF16 bits w[i] (exact; NaN payloads kept). */
export function widenBf16(w: Uint16Array, out: Float32Array, impl = selection().impl): void {
  if (!(w instanceof Uint16Array)) throw new TypeError('widenBf16: w must be a Uint16Array of BF16 bits');
  if (!(out instanceof Float32Array)) throw new TypeError('widenBf16: out must be a Float32Array');
  if (out.length !== w.length) throw new RangeError(`widenBf16: out.length ${out.length} ≠ w.length ${w.length}`);
  if (!disjoint(out, w)) throw new TypeError('widenBf16: out must not share memory with w');
  impl.widenBf16(w, out);
}

/**
 * Asks the OS to back the whole 2 MiB blocks of `view`'s memory with huge pages (Linux, addon only; call before the
 * memory is first written): fewer TLB misses when a decode step streams the weights. Returns the bytes advised (0
 * where nothing was: the fallback, another OS, or a view under 2 MiB). Values are never affected.
 */
export function adviseHugePages(view: ArrayBufferView): number {
  if (!ArrayBuffer.isView(view) || view instanceof DataView)
    throw new TypeError('adviseHugePages: view must be a typed array');
  return selection().addon?.adviseHugePages(view) ?? 0;
}

/**
 * Reads `bytes.length` bytes of the open file `fd` from `position` into `bytes`, on the pool's threads where the
 * addon is loaded (a tensor's copy and its fresh memory's page faults on every core: a 1B engine's load 3.0–3.2 s
 * instead of 4.3–5.7 on a 2-vCPU VM, docs/benchmarks.md), else with readSync. Returns the bytes read, fewer than asked
 * only where the file ends first. Bytes are bytes: nothing computed depends on which read them.
 */
export function readFileInto(fd: number, position: number, bytes: Uint8Array): number {
  if (!Number.isInteger(fd) || fd < 0) throw new TypeError('readFileInto: fd must be an open file descriptor');
  if (!Number.isSafeInteger(position) || position < 0)
    throw new RangeError('readFileInto: position must be a non-negative safe integer');
  if (!(bytes instanceof Uint8Array)) throw new TypeError('readFileInto: bytes must be a Uint8Array');
  const addon = selection().addon;
  if (addon) return addon.readFileInto(fd, position, bytes);
  let done = 0;
  while (done < bytes.length) {
    const n = readSync(fd, bytes, done, bytes.length - done, position + done);
    if (n === 0) break;
    done += n;
  }
  return done;
}

/** Read bandwidth in GB/s: the best of `repeats` passes over `buffer` (≥ 1 MiB) with wide loads on every pool thread. */
export function readBandwidth(buffer: ArrayBuffer | ArrayBufferView, repeats = 5, impl = selection().impl): number {
  if (!(buffer instanceof ArrayBuffer) && !ArrayBuffer.isView(buffer))
    throw new TypeError('readBandwidth: buffer must be an ArrayBuffer or an ArrayBuffer view');
  if (buffer.byteLength < 1 << 20) throw new RangeError('readBandwidth: buffer must hold at least 1 MiB');
  if (!Number.isInteger(repeats) || repeats < 1 || repeats > 1000) {
    throw new RangeError(`readBandwidth: repeats must be an integer in [1, 1000], got ${repeats}`);
  }
  return impl.readBandwidth(buffer, repeats);
}
