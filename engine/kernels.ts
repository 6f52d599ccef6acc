// The engine's BF16 matrix kernels: the native addon built from engine/native/ at npm ci, or, where it was not built
// (no compiler, another OS) or IWIBENCH_NATIVE=0 is set, a JavaScript fallback with the very same results. Both
// compute every output element in the summation order described in engine/native/kernels.cc, so the fallback equals
// the addon bit for bit, and a batch equals each of its rows alone whatever the thread count. Where the CPU has AMX,
// the addon also has gemmBf16Parts, a GEMM on the tile unit that then takes every product (equal to matmulBf16 within
// float32 rounding; in bf16 precision one pass over x rounded to BF16).
// attendDecode, a decode step's attention for all rows at once, residualNorm, the norms between a layer's sublayers,
// gatedGelu and roundBf16 follow orders of their own, the same in both.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The functions the addon and the fallback both provide (arguments already checked by the exports below). */
export type KernelImpl = {
  /** outs[p] [m × n_p] = x [m × k] · ws[p]ᵀ, n_p = ws[p].length / k: several products of one x in one call. */
  matmulBf16Parts(x: Float32Array, ws: Uint16Array[], outs: Float32Array[], m: number, k: number): void;
  /**
   * The same products with x rounded to BF16, in VDPBF16PS's order (bf16 precision; see dotBf16Parts below), on
   * VDPBF16PS itself or as FMAs (the addon; the same bits either way).
   */
  dotBf16Parts(
    x: Float32Array,
    ws: Uint16Array[],
    outs: Float32Array[],
    m: number,
    k: number,
    vdpbf16ps: boolean,
  ): void;
  widenBf16(w: Uint16Array, out: Float32Array): void;
  readBandwidth(buffer: ArrayBuffer | ArrayBufferView, repeats: number): number;
  /** attendDecode's work, arguments flattened as the addon takes them (see attendDecode below). */
  attendDecode(
    queries: Float32Array,
    keys: Float32Array,
    values: Float32Array,
    out: Float32Array,
    pastKeys: Float32Array[],
    pastValues: Float32Array[],
    slots: Int32Array[],
    positions: Int32Array,
    heads: number,
    kvHeads: number,
    headDim: number,
    scaling: number,
    window: number,
    bf16Probabilities: boolean,
  ): void;
  /** attendChunk's work, arguments flattened as the addon takes them (see attendChunk below). */
  attendChunk(
    queries: Float32Array,
    keys: Float32Array,
    values: Float32Array,
    out: Float32Array,
    pastKey: Float32Array,
    pastValue: Float32Array,
    slots: Int32Array,
    positions: Int32Array,
    heads: number,
    kvHeads: number,
    headDim: number,
    scaling: number,
    window: number,
    bf16Probabilities: boolean,
    onAmx: boolean,
  ): void;
  /** residualNorm's work (see residualNorm below). */
  residualNorm(
    h: Float32Array,
    a: Float32Array,
    post: Float32Array,
    next: Float32Array,
    y: Float32Array,
    eps: number,
    roundResidual: boolean,
  ): void;
  /** gatedGelu's work (see gatedGelu below). */
  gatedGelu(gate: Float32Array, up: Float32Array, z: Float32Array): void;
  /** roundBf16's work (see roundBf16 below). */
  roundBf16(x: Float32Array): void;
  /** normRope's work (see normRope below). */
  normRope(
    x: Float32Array,
    scale: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    heads: number,
    eps: number,
  ): void;
  /** argmaxRows's work (see argmaxRows below). */
  argmaxRows(values: Float32Array, n: number, out: Int32Array): void;
};

/** How dotBf16Parts multiplies: VDPBF16PS, or its steps as two FMAs (the same bits). */
export type DotPath = 'vdpbf16ps' | 'fma';

/** The instruction kinds peakRate measures: float32 FMA, VDPBF16PS, AMX's TDPBF16PS. */
export type PeakKind = 'fma' | 'vdpbf16ps' | 'amx';

/** How many BF16 parts gemmBf16Parts splits x into: 3, exact (float32 precision), or 1, x rounded (bf16). */
export type XParts = 1 | 3;

type NativeAddon = KernelImpl & {
  isa: string;
  /** How dotBf16Parts runs as FMAs: on AVX-512 F, on AVX2, or the portable loop. */
  dotIsa: string;
  /** dotBf16Parts can also run on VDPBF16PS (built for AVX-512 BF16). */
  vdpbf16ps: boolean;
  /** GFLOP/s of one instruction kind on every pool thread, register to register (0: not in this build). */
  peakRate(kind: PeakKind, iterations: number, repeats: number): number;
  /** Built with AMX (BF16 tiles) and granted its tile state by the OS: gemmBf16Parts is there. */
  amx: boolean;
  gemmBf16Parts?: (
    x: Float32Array,
    ws: Uint16Array[],
    outs: Float32Array[],
    m: number,
    k: number,
    xParts: XParts,
    roundOutput: boolean,
  ) => void;
  gemmGatedGelu?: (
    x: Float32Array,
    gate: Uint16Array,
    up: Uint16Array,
    z: Float32Array,
    m: number,
    k: number,
    xParts: XParts,
    roundOutput: boolean,
  ) => void;
  /** The kernel's vector width: 512 (AVX-512), 256 (AVX2 + FMA) or 0 (the portable loop). */
  vectorBits: number;
  setThreads(threads: number): void;
  threads(): number;
  adviseHugePages(view: ArrayBufferView): number;
};

export type KernelInfo = {
  native: boolean;
  reason?: string;
  threads: number;
  isa?: string;
  /** dotBf16Parts's FMA path, and whether it can take VDPBF16PS (the addon only). */
  dotIsa?: string;
  vdpbf16ps?: boolean;
  vectorBits?: number;
  /** gemmBf16Parts is available (the addon only). */
  amx?: boolean;
};

const ADDON_PATH = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  'native/build/Release/iwibench_kernels.node',
);

// ---------------------------------------------------------------------------------------------------------------
// The JavaScript fallback: one thread, the addon's summation order, FMA emulated exactly.

/**
 * fma(a, b, c) rounded once to float32, for float32 a, b, c. a·b is exact in a double (48 significant bits); a·b + c
 * rounded to a double and then to float32 is the correctly rounded result unless the double lands exactly halfway
 * between two float32 values while the exact sum did not: then the sum's error term (TwoSum) picks the side.
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  const r = Math.fround(s);
  const bp = s - p;
  const e = p - (s - bp) + (c - bp); // s + e = p + c exactly (NaN where s is not finite: then r is right)
  if (e === 0) return r;
  const d = s - r; // exact: s and r are neighbours
  const other = r + 2 * d; // the float32 on s's other side if s is a midpoint
  return Math.fround(other) === other && e > 0 === d > 0 ? other : r;
}

function matmulJs(x: Float32Array, w: Uint16Array, out: Float32Array, m: number, n: number, k: number): void {
  const k8 = k - (k % 8);
  const wf = new Float32Array(k);
  const wBits = new Uint32Array(wf.buffer);
  const f = Math.fround;
  for (let j = 0; j < n; j++) {
    for (let i = 0, o = j * k; i < k; i++) wBits[i] = w[o + i]! << 16;
    for (let r = 0; r < m; r++) {
      const xRow = r * k;
      // The 8 lane sums in locals (the JIT keeps them in registers).
      let a0 = 0,
        a1 = 0,
        a2 = 0,
        a3 = 0,
        a4 = 0,
        a5 = 0,
        a6 = 0,
        a7 = 0;
      for (let i = 0; i < k8; i += 8) {
        const o = xRow + i;
        a0 = fmaF32(x[o]!, wf[i]!, a0);
        a1 = fmaF32(x[o + 1]!, wf[i + 1]!, a1);
        a2 = fmaF32(x[o + 2]!, wf[i + 2]!, a2);
        a3 = fmaF32(x[o + 3]!, wf[i + 3]!, a3);
        a4 = fmaF32(x[o + 4]!, wf[i + 4]!, a4);
        a5 = fmaF32(x[o + 5]!, wf[i + 5]!, a5);
        a6 = fmaF32(x[o + 6]!, wf[i + 6]!, a6);
        a7 = fmaF32(x[o + 7]!, wf[i + 7]!, a7);
      }
      let s = f(f(f(a0 + a4) + f(a2 + a6)) + f(f(a1 + a5) + f(a3 + a7)));
      for (let i = k8; i < k; i++) s = fmaF32(x[xRow + i]!, wf[i]!, s);
      out[r * n + j] = s;
    }
  }
}

function matmulPartsJs(x: Float32Array, ws: Uint16Array[], outs: Float32Array[], m: number, k: number): void {
  ws.forEach((w, p) => matmulJs(x, w, outs[p]!, m, w.length / k, k));
}

/** A float32 value with a denormal read or written as a zero of its sign (VDPBF16PS's DAZ and FTZ). */
function flushDenormal(v: number): number {
  return Math.abs(v) < 2 ** -126 ? v * 0 : v;
}

/** BF16 values of one VDPBF16PS step: 16 lanes of one pair each. */
const DOT_CHUNK = 32;

/** The addon's dotBf16 order (engine/native/kernels.cc): 16 lane sums over pairs, odd element first, then a tree. */
function dotPartsJs(x: Float32Array, ws: Uint16Array[], outs: Float32Array[], m: number, k: number): void {
  // One path: the fallback follows the order step by step, whichever instruction the addon would take.
  const f = Math.fround;
  const kp = Math.ceil(k / DOT_CHUNK) * DOT_CHUNK;
  const xb = new Float32Array(m * kp); // x rounded to BF16, zeros past k
  for (let r = 0; r < m; r++) xb.set(x.subarray(r * k, (r + 1) * k), r * kp);
  roundBf16Js(xb);
  const wb = new Float32Array(kp);
  const wBits = new Uint32Array(wb.buffer);
  const lanes = new Array<number>(16);
  ws.forEach((w, p) => {
    const n = w.length / k;
    for (let j = 0; j < n; j++) {
      wb.fill(0);
      for (let i = 0; i < k; i++) wBits[i] = w[j * k + i]! << 16;
      for (let r = 0; r < m; r++) {
        lanes.fill(0);
        for (let i = 0; i < kp; i += 2) {
          const l = (i % DOT_CHUNK) / 2;
          const odd = fmaF32(flushDenormal(xb[r * kp + i + 1]!), flushDenormal(wb[i + 1]!), lanes[l]!);
          lanes[l] = flushDenormal(fmaF32(flushDenormal(xb[r * kp + i]!), flushDenormal(wb[i]!), flushDenormal(odd)));
        }
        const add = (a: number, b: number) => flushDenormal(f(a + b));
        const s8 = Array.from({ length: 8 }, (_, i) => add(lanes[i]!, lanes[i + 8]!));
        const s4 = Array.from({ length: 4 }, (_, i) => add(s8[i]!, s8[i + 4]!));
        outs[p]![r * n + j] = add(add(s4[0]!, s4[2]!), add(s4[1]!, s4[3]!));
      }
    }
  });
}

function widenJs(w: Uint16Array, out: Float32Array): void {
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < w.length; i++) bits[i] = w[i]! << 16;
}

let bandwidthSink = 0; // keeps the fallback's loads from being optimised away

function readBandwidthJs(buffer: ArrayBuffer | ArrayBufferView, repeats: number): number {
  const view = buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : buffer;
  const skip = (4 - (view.byteOffset % 4)) % 4; // Int32Array needs a 4-byte aligned start
  const words = new Int32Array(view.buffer, view.byteOffset + skip, Math.floor((view.byteLength - skip) / 4));
  let best = Infinity;
  let sink = 0;
  for (let pass = 0; pass <= repeats; pass++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < words.length; i += 4) sink ^= words[i]! ^ words[i + 1]! ^ words[i + 2]! ^ words[i + 3]!;
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    if (pass > 0) best = Math.min(best, seconds); // pass 0 is the warm-up
  }
  bandwidthSink ^= sink;
  return (words.length * 4) / best / 1e9;
}

/** The dot product of the matmul's order (8 lane sums, their tree, the tail) over `D` floats of a and b. */
function dotJs(a: Float32Array, ao: number, b: Float32Array, bo: number, D: number): number {
  const f = Math.fround;
  const lanes = [0, 0, 0, 0, 0, 0, 0, 0];
  const d8 = D - (D % 8);
  for (let i = 0; i < d8; i += 8)
    for (let l = 0; l < 8; l++) lanes[l] = fmaF32(a[ao + i + l]!, b[bo + i + l]!, lanes[l]!);
  const [a0, a1, a2, a3, a4, a5, a6, a7] = lanes as [number, number, number, number, number, number, number, number];
  let s = f(f(f(a0 + a4) + f(a2 + a6)) + f(f(a1 + a5) + f(a3 + a7)));
  for (let i = d8; i < D; i++) s = fmaF32(a[ao + i]!, b[bo + i]!, s);
  return s;
}

const attendDecodeJs: KernelImpl['attendDecode'] = (
  queries,
  keys,
  values,
  out,
  pastKeys,
  pastValues,
  slots,
  positions,
  heads,
  kvHeads,
  D,
  scaling,
  window,
  bf16Probabilities,
) => {
  const f = Math.fround;
  const rep = heads / kvHeads;
  for (let r = 0; r < positions.length; r++) {
    const position = positions[r]!;
    const held = slots[r]!;
    const S = held.length;
    const visible = (s: number) =>
      s === S || (held[s]! >= 0 && held[s]! <= position && (window === 0 || position - held[s]! < window));
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / rep);
      const q = (r * heads + h) * D;
      const own = (r * kvHeads + g) * D;
      const past = g * S * D;
      // Slots s < S are the cache's (in slot order), s = S the row's own new key and value.
      const key = (s: number): [Float32Array, number] => (s < S ? [pastKeys[r]!, past + s * D] : [keys, own]);
      const value = (s: number): [Float32Array, number] => (s < S ? [pastValues[r]!, past + s * D] : [values, own]);
      const scores = new Float32Array(S + 1);
      let max = -Infinity;
      for (let s = 0; s <= S; s++) {
        if (!visible(s)) continue;
        scores[s] = f(dotJs(queries, q, ...key(s), D) * scaling);
        if (max < scores[s]!) max = scores[s]!;
      }
      let sum = 0;
      for (let s = 0; s <= S; s++) {
        if (!visible(s)) continue;
        scores[s] = f(Math.exp(f(scores[s]! - max)));
        sum = f(sum + scores[s]!);
      }
      out.fill(0, q, q + D);
      for (let s = 0; s <= S; s++) {
        if (!visible(s)) continue;
        const p = bf16Probabilities ? roundToBf16(scores[s]! / sum) : f(scores[s]! / sum);
        const [v, vo] = value(s);
        for (let d = 0; d < D; d++) out[q + d] = fmaF32(p, v[vo + d]!, out[q + d]!);
      }
    }
  }
};

const attendChunkJs: KernelImpl['attendChunk'] = (
  queries,
  keys,
  values,
  out,
  pastKey,
  pastValue,
  slots,
  positions,
  heads,
  kvHeads,
  D,
  scaling,
  window,
  bf16Probabilities,
  onAmx,
) => {
  if (onAmx) throw new Error('attendChunk: the fallback has no AMX (its path is the FMAs)');
  const f = Math.fround;
  const [S, T, rep] = [slots.length, positions.length, heads / kvHeads];
  const position = (j: number) => (j < S ? slots[j]! : positions[j - S]!);
  for (let t = 0; t < T; t++) {
    const p = positions[t]!;
    const visible = (j: number) => {
      const k = position(j);
      return k >= 0 && k <= p && (window === 0 || p - k < window);
    };
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / rep);
      // Keys in order: the cache's S slots, then the chunk's own (the addon's attendChunk).
      const at = (j: number): [Float32Array, Float32Array, number] =>
        j < S ? [pastKey, pastValue, (g * S + j) * D] : [keys, values, ((j - S) * kvHeads + g) * D];
      const q = (t * heads + h) * D;
      const scores = new Float32Array(S + t + 1);
      let max = -Infinity;
      for (let j = 0; j <= S + t; j++) {
        if (!visible(j)) continue;
        const [k, , o] = at(j);
        let acc = 0;
        for (let d = 0; d < D; d++) acc = fmaF32(queries[q + d]!, k[o + d]!, acc);
        scores[j] = f(acc * scaling);
        if (max < scores[j]!) max = scores[j]!;
      }
      let sum = 0;
      for (let j = 0; j <= S + t; j++) {
        if (!visible(j)) continue;
        scores[j] = expClampedJs(f(scores[j]! - max));
        sum = f(sum + scores[j]!);
      }
      out.fill(0, q, q + D);
      for (let j = 0; j <= S + t; j++) {
        if (!visible(j)) continue;
        const pj = bf16Probabilities ? roundToBf16(scores[j]! / sum) : f(scores[j]! / sum);
        const [, v, o] = at(j);
        for (let d = 0; d < D; d++) out[q + d] = fmaF32(pj, v[o + d]!, out[q + d]!);
      }
    }
  }
};

/** 1 / √(Σ x² / H + eps) over x[o … o + H), the sum in the matmul's order (dotJs). */
function rmsScaleJs(x: Float32Array, o: number, H: number, eps: number): number {
  const f = Math.fround;
  return f(1 / f(Math.sqrt(f(f(dotJs(x, o, x, o, H) / H) + eps))));
}

const residualNormJs: KernelImpl['residualNorm'] = (h, a, post, next, y, eps, roundResidual) => {
  const f = Math.fround;
  const H = post.length;
  for (let o = 0; o < h.length; o += H) {
    const sa = rmsScaleJs(a, o, H, eps);
    for (let i = 0; i < H; i++) h[o + i] = fmaF32(f(a[o + i]! * sa), post[i]!, h[o + i]!);
    if (roundResidual) roundBf16Js(h.subarray(o, o + H));
    const sh = rmsScaleJs(h, o, H, eps);
    for (let i = 0; i < H; i++) y[o + i] = f(f(h[o + i]! * sh) * next[i]!);
  }
};

const normRopeJs: KernelImpl['normRope'] = (x, scale, cos, sin, heads, eps) => {
  const f = Math.fround;
  const D = scale.length;
  const half = D / 2;
  const y = new Float32Array(D);
  for (let r = 0; r < cos.length / half; r++)
    for (let h = 0; h < heads; h++) {
      const o = (r * heads + h) * D;
      const norm = rmsScaleJs(x, o, D, eps);
      for (let i = 0; i < D; i++) y[i] = f(f(x[o + i]! * norm) * scale[i]!);
      for (let i = 0; i < half; i++) {
        const [c, s] = [cos[r * half + i]!, sin[r * half + i]!];
        x[o + i] = f(f(y[i]! * c) - f(y[i + half]! * s));
        x[o + i + half] = f(f(y[i + half]! * c) + f(y[i]! * s));
      }
    }
};

// gelu_tanh(x) · up in the addon's steps (engine/native/kernels.cc, geluTimes), each rounded to float32.
const GELU = (() => {
  const f = Math.fround;
  return {
    cubic: f(0.044715),
    root: f(Math.sqrt(2 / Math.PI)),
    log2e: f(Math.LOG2E),
    ln2Hi: 0.693359375,
    ln2Lo: f(Math.LN2 - 0.693359375),
    inverseFactorial: [5040, 720, 120, 24, 6, 2].map((n) => f(1 / n)),
  };
})();

/** e^t for float32 t, clamped to [−87, 88], in the addon's steps (expClamped): 2^k · p(r). */
function expClampedJs(t: number): number {
  const tc = Math.min(Math.max(t, -87), 88);
  const k = Math.floor(fmaF32(tc, GELU.log2e, 0.5));
  let r = fmaF32(-k, GELU.ln2Hi, tc);
  r = fmaF32(-k, GELU.ln2Lo, r);
  let p = GELU.inverseFactorial[0]!;
  for (let i = 1; i < 6; i++) p = fmaF32(p, r, GELU.inverseFactorial[i]!);
  p = fmaF32(p, r, 1);
  p = fmaF32(p, r, 1);
  return Math.fround(p * 2 ** k);
}

function geluTimesJs(x: number, up: number): number {
  const f = Math.fround;
  const u = f(GELU.root * fmaF32(GELU.cubic, f(f(x * x) * x), x));
  return f(f(x / f(1 + expClampedJs(f(-2 * u)))) * up);
}

const gatedGeluJs: KernelImpl['gatedGelu'] = (gate, up, z) => {
  for (let i = 0; i < z.length; i++) z[i] = geluTimesJs(gate[i]!, up[i]!);
};

/**
 * The bits of a float32 rounded to the nearest BF16, as float32 bits (the addon's roundBf16Bits): ties to even in
 * integer arithmetic, a NaN kept NaN (its quiet bit set). The one definition of the rounding in JavaScript (bf16.ts's
 * f32ToBf16Bits takes its top half).
 */
export function roundBf16Bits(bits: number): number {
  const b = bits >>> 0;
  const rounded = (b & 0x7fffffff) > 0x7f800000 ? b | 0x00400000 : b + 0x7fff + ((b >>> 16) & 1);
  return (rounded & 0xffff0000) >>> 0;
}

const scalarBits = new Uint32Array(1);
const scalarFloat = new Float32Array(scalarBits.buffer);

/** The float32 value that a number becomes after rounding to BF16 (roundBf16Bits; bf16.ts offers it too). */
export function roundToBf16(value: number): number {
  scalarFloat[0] = value;
  scalarBits[0] = roundBf16Bits(scalarBits[0]!);
  return scalarFloat[0]!;
}

function roundBf16Js(x: Float32Array): void {
  const bits = new Uint32Array(x.buffer, x.byteOffset, x.length);
  for (let i = 0; i < bits.length; i++) bits[i] = roundBf16Bits(bits[i]!);
}

/** The first index of the largest value in values[offset … offset + n) (NaN never chosen; 0 if none exceeds −∞). */
export function argmax(values: Float32Array, offset: number, n: number): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[offset + i]!;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

const argmaxRowsJs: KernelImpl['argmaxRows'] = (values, n, out) => {
  for (let r = 0; r < out.length; r++) out[r] = argmax(values, r * n, n);
};

/** The fallback, exported so that tests run the very code the engine uses when the addon is absent. */
export const jsKernels: KernelImpl = {
  matmulBf16Parts: matmulPartsJs,
  dotBf16Parts: dotPartsJs,
  widenBf16: widenJs,
  readBandwidth: readBandwidthJs,
  attendDecode: attendDecodeJs,
  attendChunk: attendChunkJs,
  residualNorm: residualNormJs,
  gatedGelu: gatedGeluJs,
  roundBf16: roundBf16Js,
  argmaxRows: argmaxRowsJs,
  normRope: normRopeJs,
};

// ---------------------------------------------------------------------------------------------------------------
// Choosing the implementation.

export type Selection = { impl: KernelImpl; addon?: NativeAddon; reason?: string; notice?: string };

/** The addon at `addonPath` unless env.IWIBENCH_NATIVE is '0'; the fallback (with a notice if the addon is missing). */
export function selectKernels(env: NodeJS.ProcessEnv, addonPath: string): Selection {
  if (env.IWIBENCH_NATIVE === '0') return { impl: jsKernels, reason: 'IWIBENCH_NATIVE=0' };
  let reason: string;
  if (!existsSync(addonPath)) {
    reason = `${path.relative(process.cwd(), addonPath) || addonPath} is missing`;
  } else {
    try {
      const addon = createRequire(import.meta.url)(addonPath) as NativeAddon;
      addon.setThreads(os.availableParallelism());
      return { impl: addon, addon };
    } catch (error) {
      reason = `loading it failed: ${(error as Error).message.split('\n')[0]}`;
    }
  }
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

export function kernelInfo(): KernelInfo {
  const { addon, reason } = selection();
  if (addon)
    return {
      native: true,
      threads: addon.threads(),
      isa: addon.isa,
      dotIsa: addon.dotIsa,
      vdpbf16ps: addon.vdpbf16ps,
      vectorBits: addon.vectorBits,
      amx: addon.amx,
    };
  return { native: false, reason, threads: 1 };
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

/** Checks the arguments of matmulBf16Parts (and gemmBf16Parts, named `fn`); throws TypeError/RangeError. */
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
 * out[m×n] = x[m×k] · Wᵀ, W [n×k] BF16 bits row-major (a safetensors tensor [out_features, in_features]): BF16 widened
 * exactly, multiply-add and accumulation in float32. out[r, j] depends only on x's row r and W's row j.
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
  impl.matmulBf16Parts(x, [w], [out], m, k);
}

/**
 * matmulBf16 for several weights of the same x in one call (a layer's q, k and v; gate and up): outs[p] = x · ws[p]ᵀ,
 * bit for bit what one call per weight gives, with the threads woken once and every weight streamed as one stretch.
 */
export function matmulBf16Parts(
  x: Float32Array,
  ws: Uint16Array[],
  outs: Float32Array[],
  m: number,
  k: number,
  impl = selection().impl,
): void {
  checkMatmulArgs(x, ws, outs, m, k);
  impl.matmulBf16Parts(x, ws, outs, m, k);
}

/**
 * bf16 precision's products where AMX is not used: outs[p] = x · ws[p]ᵀ with x rounded to BF16 (to nearest, ties to
 * even), every product of two BF16 values exact, the sums in VDPBF16PS's order (16 lane sums over pairs of k, the odd
 * element first; denormals read and written as zero; engine/native/kernels.cc). VDPBF16PS itself where the CPU has
 * AVX-512 BF16 (twice the multiply-adds of an FMA an instruction), its steps as FMAs elsewhere; the fallback gives the
 * same bits. out[r, j] depends only on x's row r and W's row j.
 */
export function dotBf16Parts(
  x: Float32Array,
  ws: Uint16Array[],
  outs: Float32Array[],
  m: number,
  k: number,
  path: DotPath = 'fma',
  impl = selection().impl,
): void {
  checkMatmulArgs(x, ws, outs, m, k, 'dotBf16Parts');
  if (path !== 'fma' && path !== 'vdpbf16ps') throw new RangeError(`dotBf16Parts: path must be fma or vdpbf16ps`);
  impl.dotBf16Parts(x, ws, outs, m, k, path === 'vdpbf16ps');
}

/**
 * GFLOP/s of one instruction kind on every pool thread, register to register, the best of `repeats` passes: the
 * ceiling each product path is measured against (0 where the addon lacks the kind; undefined without the addon).
 */
export function peakRate(kind: PeakKind, iterations = 200_000, repeats = 3): number | undefined {
  return selection().addon?.peakRate(kind, iterations, repeats);
}

let vdpOutpaces: boolean | undefined;

/**
 * Whether VDPBF16PS out-multiplies two FMAs here by half again (its peak rate against theirs, measured once a process,
 * ~50 ms): it does twice an FMA's multiply-adds, at a rate that depends on the CPU (on this project's Xeon a third of
 * two FMAs'). False without the instruction.
 */
export function vdpbf16psOutpacesFma(): boolean {
  if (vdpOutpaces === undefined) {
    const addon = selection().addon;
    vdpOutpaces =
      addon?.vdpbf16ps === true && addon.peakRate('vdpbf16ps', 100_000, 3) > 1.5 * addon.peakRate('fma', 200_000, 3);
  }
  return vdpOutpaces;
}

/**
 * matmulBf16Parts on AMX's tile unit (the addon, where kernelInfo().amx). With xParts 3 each row of x is split exactly
 * into three BF16 parts, every product exact, float32 accumulators: within float32 rounding of matmulBf16 (not bit
 * for bit). With xParts 1, x is rounded to BF16 (ties to even) and multiplied in one pass, a third of the work: what
 * the three give for an x that BF16 holds exactly. `roundOutput` rounds each output to BF16 as it is stored (roundBf16's
 * rounding: bf16 precision's product, without a pass of its own). Either way out[r, j] depends only on x's row r and
 * W's row j.
 */
export function gemmBf16Parts(
  x: Float32Array,
  ws: Uint16Array[],
  outs: Float32Array[],
  m: number,
  k: number,
  xParts: XParts = 3,
  roundOutput = false,
): void {
  checkMatmulArgs(x, ws, outs, m, k, 'gemmBf16Parts');
  if (xParts !== 1 && xParts !== 3) throw new RangeError(`gemmBf16Parts: xParts must be 1 or 3, got ${xParts}`);
  if (typeof roundOutput !== 'boolean') throw new TypeError('gemmBf16Parts: roundOutput must be a boolean');
  const { addon } = selection();
  const gemm = addon?.gemmBf16Parts;
  if (!addon?.amx || !gemm) throw new Error(`gemmBf16Parts: not available here (${amxAbsence()})`);
  gemm(x, ws, outs, m, k, xParts, roundOutput);
}

/**
 * z [m × n] = gelu_tanh(x · gateᵀ) · (x · upᵀ) on AMX (gate_proj and up_proj [n × k], BF16 bits): the two products as
 * gemmBf16Parts(x, [gate, up], …, xParts, roundOutput) writes them, then gatedGelu, bit for bit; but each block of
 * both is multiplied in one work item and only z is written, so the two [m × n] products never go through memory.
 */
export function gemmGatedGelu(
  x: Float32Array,
  gate: Uint16Array,
  up: Uint16Array,
  z: Float32Array,
  m: number,
  k: number,
  xParts: XParts = 3,
  roundOutput = false,
): void {
  checkMatmulArgs(x, [gate], [z], m, k, 'gemmGatedGelu');
  if (!(up instanceof Uint16Array) || up.length !== gate.length)
    throw new RangeError(`gemmGatedGelu: up must be a Uint16Array as long as gate (${gate.length})`);
  if (!disjoint(z, up)) throw new TypeError('gemmGatedGelu: z must not share memory with up');
  if (xParts !== 1 && xParts !== 3) throw new RangeError(`gemmGatedGelu: xParts must be 1 or 3, got ${xParts}`);
  if (typeof roundOutput !== 'boolean') throw new TypeError('gemmGatedGelu: roundOutput must be a boolean');
  const { addon } = selection();
  const gemm = addon?.gemmGatedGelu;
  if (!addon?.amx || !gemm) throw new Error(`gemmGatedGelu: not available here (${amxAbsence()})`);
  gemm(x, gate, up, z, m, k, xParts, roundOutput);
}

/** Why gemmBf16Parts and gemmGatedGelu are not available (for errors). */
function amxAbsence(): string {
  const { addon, reason } = selection();
  if (!addon) return `the native addon is not loaded: ${reason}`;
  if (!addon.gemmBf16Parts) return 'the addon was built without AMX (the CPU or the compiler lacks it)';
  return 'the OS did not grant this process the AMX tile state';
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
 * depends only on its own row (engine/native/kernels.cc gives the order); the fallback equals the addon bit for bit
 * unless the two libraries' double exp differ across a float32 rounding (not seen).
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

/** Where attendChunk takes its two products: float32 fused multiply-adds (every build), or the tile unit in BF16. */
export type AttentionPath = 'fma' | 'amx';

/**
 * A one-sequence chunk's attention (a prefill): T queries [T × heads × D] at `positions` (≥ 0) over the S past slots
 * of its cache ([kvHeads × S × D], positions `slots`, −1 never attended) and the chunk's own keys and values
 * [T × kvHeads × D] (after q/k norms and RoPE, before they are stored), into out [T × heads × D]. Key j is visible to
 * query t when 0 ≤ p_j ≤ p_t and, on a sliding layer, p_t − p_j < window; GQA without repeating keys. Each score is a
 * dot product summed over head_dim in order with fused multiply-adds (engine/native/kernels.cc gives every step); the
 * fallback equals the addon bit for bit, and both the attention graph within float32 rounding.
 *
 * With `path` 'amx' (bf16 precision where the CPU has AMX, with shape.bf16Probabilities; the addon only) both
 * products run on the tile unit: the scores over the queries and keys rounded to BF16, the softmax as above, the BF16
 * probabilities against the values rounded to BF16. Every product is exact and the float32 sums go in the tile unit's
 * order (over the values a tile of 32 keys at a time, counted from each source's first key: the cache's slot 0, the
 * chunk's first token), so the result is within float32 rounding of the FMAs' (not bit for bit), and each query's
 * still depends on its own keys alone.
 */
export function attendChunk(
  queries: Float32Array,
  keys: Float32Array,
  values: Float32Array,
  out: Float32Array,
  past: ChunkPast,
  positions: Int32Array,
  shape: DecodeAttentionShape,
  path: AttentionPath = 'fma',
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
  if (path !== 'fma' && path !== 'amx') throw new RangeError(`attendChunk: path must be 'fma' or 'amx', got ${path}`);
  if (path === 'amx') {
    if (!selection().addon?.amx) throw new Error(`attendChunk: AMX not available here (${amxAbsence()})`);
    if (D % 16 !== 0) throw new RangeError(`attendChunk: AMX needs headDim a multiple of 16, got ${D}`);
    if (shape.bf16Probabilities !== true)
      throw new RangeError('attendChunk: AMX needs bf16Probabilities (the tile unit takes the probabilities as BF16)');
  }
  const args = [
    heads,
    kvHeads,
    D,
    Math.fround(scaling),
    window,
    shape.bf16Probabilities === true,
    path === 'amx',
  ] as const;
  impl.attendChunk(queries, keys, values, out, past.key, past.value, past.slots, positions, ...args);
}

/**
 * The end of a layer's sublayer and the next one's norm (Gemma3DecoderLayer), for rows = h.length / H of H =
 * post.length floats: h += a normed by post (h updated in place: the residual stream; rounded to BF16 when
 * `roundResidual`, as bf16 precision keeps it), then y = h normed by next. Gemma3RMSNorm's x · (1 / √(mean(x²) +
 * eps)) · scale with scale = 1 + w, the sum of squares in the matmul's order and h's add fused with its last product;
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
 * Gemma3Attention's q_norm or k_norm and then its RoPE, in place on x [rows × heads × D] (D = scale.length, even):
 * each head normed as Gemma3RMSNorm (scale = 1 + w, the sum of squares in the matmul's order), then rotated by its
 * row's cos and sin [rows × D/2] as apply_rotary_pos_emb with rotate_half. Each product and sum is rounded to float32
 * in the addon's order (engine/native/kernels.cc), the same bits in both; within float32 rounding of the graphs'
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
 * (engine/native/kernels.cc says how e^t is computed), within float32 rounding of PyTorch's.
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
