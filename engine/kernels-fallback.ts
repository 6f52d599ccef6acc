// The JavaScript fallback of the kernels, and the oracle of the arithmetic (engine/native/arithmetic.h): one thread,
// every op in the addon's order with fused multiply-adds emulated exactly, so that each instruction-set path of the
// addon gives these very bits (test/engine/arithmetic.test.ts) and a machine without a compiler gives the same
// results, only slower.

/** The functions the addon and the fallback both provide (arguments already checked by kernels.ts's entry points). */
export type KernelImpl = {
  /**
   * outs[p] [m × n_p] = x [m × k] · ws[p]ᵀ, n_p = ws[p].length / k, in the tile order; `bf16`: bf16 precision's
   * arithmetic (x rounded, denormals flushed), `roundOutput`: outputs rounded to BF16.
   */
  products(
    x: Float32Array,
    ws: Uint16Array[],
    outs: Float32Array[],
    m: number,
    k: number,
    bf16: boolean,
    roundOutput: boolean,
  ): void;
  widenBf16(w: Uint16Array, out: Float32Array): void;
  readBandwidth(buffer: ArrayBuffer | ArrayBufferView, repeats: number): number;
  /** attendDecode's work, arguments flattened as the addon takes them (see kernels.ts attendDecode). */
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
  /** attendChunk's work, arguments flattened as the addon takes them (see kernels.ts attendChunk). */
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
  ): void;
  /** residualNorm's work (kernels.ts). */
  residualNorm(
    h: Float32Array,
    a: Float32Array,
    post: Float32Array,
    next: Float32Array,
    y: Float32Array,
    eps: number,
    roundResidual: boolean,
  ): void;
  /** rmsNorm's work (kernels.ts). */
  rmsNorm(x: Float32Array, scale: Float32Array, y: Float32Array, eps: number): void;
  /** gatedGelu's work (kernels.ts). */
  gatedGelu(gate: Float32Array, up: Float32Array, z: Float32Array): void;
  /** roundBf16's work (kernels.ts). */
  roundBf16(x: Float32Array): void;
  /** normRope's work (kernels.ts). */
  normRope(
    x: Float32Array,
    scale: Float32Array,
    cos: Float32Array,
    sin: Float32Array,
    heads: number,
    eps: number,
  ): void;
  /** argmaxRows's work (kernels.ts). */
  argmaxRows(values: Float32Array, n: number, out: Int32Array): void;
  /** vocabPartials's work (kernels.ts). */
  vocabPartials(
    logits: Float32Array,
    n: number,
    chunk: number,
    chunkMax: Float32Array,
    chunkSum: Float32Array,
    top: Float32Array,
    ids: Int32Array,
    idBase: number,
  ): void;
};

// ---------------------------------------------------------------------------------------------------------------

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

/** A float32 value with a denormal read or written as a zero of its sign (the tile unit's DAZ and FTZ). */
function flushDenormal(v: number): number {
  return Math.abs(v) < 2 ** -126 ? v * 0 : v;
}

/**
 * outs[p] = x · ws[p]ᵀ in the tile order (engine/native/arithmetic.h): k padded with zeros to whole blocks of 32, per
 * output acc = +0, then for each block its even and odd k in two chains of fused multiply-adds from +0, and acc +=
 * (even + odd). bf16 precision: x rounded to BF16, every input and sum with denormals flushed, the outputs rounded to
 * BF16 when `roundOutput`.
 */
const productsJs: KernelImpl['products'] = (x, ws, outs, m, k, bf16, roundOutput) => {
  const f = Math.fround;
  const kp = Math.ceil(k / 32) * 32;
  const keep = bf16 ? flushDenormal : (v: number) => v;
  const xs = new Float32Array(m * kp); // x as the sums read it, zeros past k
  for (let r = 0; r < m; r++)
    for (let i = 0; i < k; i++) xs[r * kp + i] = keep(bf16 ? roundToBf16(x[r * k + i]!) : x[r * k + i]!);
  const wf = new Float32Array(kp);
  const wBits = new Uint32Array(wf.buffer);
  ws.forEach((w, p) => {
    const n = w.length / k;
    for (let j = 0; j < n; j++) {
      for (let i = 0; i < k; i++) wBits[i] = w[j * k + i]! << 16;
      if (bf16) for (let i = 0; i < k; i++) wf[i] = flushDenormal(wf[i]!);
      for (let r = 0; r < m; r++) {
        const o = r * kp;
        let acc = 0;
        for (let b = 0; b < kp; b += 32) {
          let even = 0;
          let odd = 0;
          for (let i = b; i < b + 32; i += 2) {
            even = keep(fmaF32(xs[o + i]!, wf[i]!, even));
            odd = keep(fmaF32(xs[o + i + 1]!, wf[i + 1]!, odd));
          }
          acc = keep(f(acc + keep(f(even + odd))));
        }
        outs[p]![r * n + j] = roundOutput ? roundToBf16(acc) : acc;
      }
    }
  });
};

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

/** dot8's tree over 8 lane sums: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). */
function reduce8Js(lanes: ArrayLike<number>): number {
  const f = Math.fround;
  return f(
    f(f(lanes[0]! + lanes[4]!) + f(lanes[2]! + lanes[6]!)) + f(f(lanes[1]! + lanes[5]!) + f(lanes[3]! + lanes[7]!)),
  );
}

/** The dot product in 8 lanes (8 lane sums, their tree, the tail) over `D` floats of a and b. */
function dotJs(a: Float32Array, ao: number, b: Float32Array, bo: number, D: number): number {
  const lanes = [0, 0, 0, 0, 0, 0, 0, 0];
  const d8 = D - (D % 8);
  for (let i = 0; i < d8; i += 8)
    for (let l = 0; l < 8; l++) lanes[l] = fmaF32(a[ao + i + l]!, b[bo + i + l]!, lanes[l]!);
  let s = reduce8Js(lanes);
  for (let i = d8; i < D; i++) s = fmaF32(a[ao + i]!, b[bo + i]!, s);
  return s;
}

/** The slot holding the earliest position (the addon's ringStart): from it, around the ring, positions ascend. */
function ringStart(slots: Int32Array): number {
  let first = 0;
  for (let s = 0; s < slots.length; s++)
    if (slots[s]! >= 0 && (slots[first]! < 0 || slots[s]! < slots[first]!)) first = s;
  return first;
}

/**
 * One query's attention past its scores: the softmax over keys 0 … n − 1 that are `visible` (`score` gives each one's
 * scaled score), in key order, then the values weighted by it, summed into out[q … q + D) by one FMA a key (the
 * addon's order in both attentions; each computes its scores in its own).
 */
function softmaxValues(
  n: number,
  visible: (j: number) => boolean,
  score: (j: number) => number,
  value: (j: number) => [Float32Array, number],
  out: Float32Array,
  q: number,
  D: number,
  bf16Probabilities: boolean,
): void {
  const f = Math.fround;
  const scores = new Float32Array(n);
  let max = -Infinity;
  for (let j = 0; j < n; j++) {
    if (!visible(j)) continue;
    scores[j] = score(j);
    if (max < scores[j]!) max = scores[j]!;
  }
  let sum = 0;
  for (let j = 0; j < n; j++) {
    if (!visible(j)) continue;
    scores[j] = expClampedJs(f(scores[j]! - max));
    sum = f(sum + scores[j]!);
  }
  out.fill(0, q, q + D);
  for (let j = 0; j < n; j++) {
    if (!visible(j)) continue;
    const p = bf16Probabilities ? roundToBf16(scores[j]! / sum) : f(scores[j]! / sum);
    const [v, vo] = value(j);
    for (let d = 0; d < D; d++) out[q + d] = fmaF32(p, v[vo + d]!, out[q + d]!);
  }
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
    // Key s < S is slot (first + s) mod S, the cache's keys by ascending position; s = S the row's own.
    const first = ringStart(held);
    const slot = (s: number) => (first + s) % S;
    const visible = (s: number) =>
      s === S ||
      (held[slot(s)]! >= 0 && held[slot(s)]! <= position && (window === 0 || position - held[slot(s)]! < window));
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / rep);
      const q = (r * heads + h) * D;
      const own = (r * kvHeads + g) * D;
      const past = g * S * D;
      const key = (s: number): [Float32Array, number] => (s < S ? [pastKeys[r]!, past + slot(s) * D] : [keys, own]);
      const value = (s: number): [Float32Array, number] =>
        s < S ? [pastValues[r]!, past + slot(s) * D] : [values, own];
      const score = (s: number) => f(dotJs(queries, q, ...key(s), D) * scaling);
      softmaxValues(S + 1, visible, score, value, out, q, D, bf16Probabilities);
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
) => {
  const f = Math.fround;
  const [S, T, rep] = [slots.length, positions.length, heads / kvHeads];
  // Key j < S is the cache's slot (first + j) mod S, by ascending position (ringStart); then the chunk's own.
  const first = ringStart(slots);
  const slot = (j: number) => (first + j) % S;
  const position = (j: number) => (j < S ? slots[slot(j)]! : positions[j - S]!);
  for (let t = 0; t < T; t++) {
    const p = positions[t]!;
    const visible = (j: number) => {
      const k = position(j);
      return k >= 0 && k <= p && (window === 0 || p - k < window);
    };
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / rep);
      // Keys in order: the cache's S slots by position, then the chunk's own (the addon's attendChunk).
      const at = (j: number): [Float32Array, Float32Array, number] =>
        j < S ? [pastKey, pastValue, (g * S + slot(j)) * D] : [keys, values, ((j - S) * kvHeads + g) * D];
      const q = (t * heads + h) * D;
      const score = (j: number) => {
        const [k, , o] = at(j);
        let acc = 0;
        for (let d = 0; d < D; d++) acc = fmaF32(queries[q + d]!, k[o + d]!, acc);
        return f(acc * scaling);
      };
      const value = (j: number): [Float32Array, number] => {
        const [, v, o] = at(j);
        return [v, o];
      };
      softmaxValues(S + t + 1, visible, score, value, out, q, D, bf16Probabilities);
    }
  }
};

/** 1 / √(Σ x² / H + eps) over x[o … o + H), the sum in dotJs's order. */
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

const rmsNormJs: KernelImpl['rmsNorm'] = (x, scale, y, eps) => {
  const f = Math.fround;
  const H = scale.length;
  for (let o = 0; o < x.length; o += H) {
    const s = rmsScaleJs(x, o, H, eps);
    for (let i = 0; i < H; i++) y[o + i] = f(f(x[o + i]! * s) * scale[i]!);
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

// gelu_tanh(x) · up in the addon's steps (engine/native/pointwise.h, geluTimes), each rounded to float32.
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

/** e^(x − m) with x − m floored at −87 (NaN and −∞ included), as engine/native/vocab.h's expBelowMax. */
function expBelowMaxJs(x: number, m: number): number {
  const t = Math.fround(x - m);
  return expClampedJs(t > -87 ? t : -87);
}

/** engine/native/vocab.h's steps: per chunk its maximum and Σ e^(x − m) in dot8's order; the running top k. */
const vocabPartialsJs: KernelImpl['vocabPartials'] = (logits, n, chunk, chunkMax, chunkSum, top, ids, idBase) => {
  const f = Math.fround;
  const rows = logits.length / n;
  const chunks = Math.ceil(n / chunk);
  const k = top.length / rows;
  const lanes = new Float32Array(8);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < chunks; c++) {
      const begin = r * n + c * chunk;
      const len = Math.min(chunk, n - c * chunk);
      let m = -Infinity;
      for (let i = 0; i < len; i++) if (logits[begin + i]! > m) m = logits[begin + i]!;
      m = f(m + 0);
      lanes.fill(0);
      const len8 = len - (len % 8);
      for (let i = 0; i < len8; i++) lanes[i % 8] = f(lanes[i % 8]! + expBelowMaxJs(logits[begin + i]!, m));
      let s = reduce8Js(lanes);
      for (let i = len8; i < len; i++) s = f(s + expBelowMaxJs(logits[begin + i]!, m));
      chunkMax[r * chunks + c] = m;
      chunkSum[r * chunks + c] = s;
      for (let i = 0; i < len && k > 0; i++) {
        const x = logits[begin + i]!;
        if (!(x > top[r * k + k - 1]!)) continue;
        let at = k - 1;
        for (; at > 0 && top[r * k + at - 1]! < x; at--) {
          top[r * k + at] = top[r * k + at - 1]!;
          ids[r * k + at] = ids[r * k + at - 1]!;
        }
        top[r * k + at] = x;
        ids[r * k + at] = idBase + c * chunk + i;
      }
    }
  }
};

/** The fallback, exported so that tests run the very code the engine uses when the addon is absent. */
export const jsKernels: KernelImpl = {
  products: productsJs,
  rmsNorm: rmsNormJs,
  widenBf16: widenJs,
  readBandwidth: readBandwidthJs,
  attendDecode: attendDecodeJs,
  attendChunk: attendChunkJs,
  residualNorm: residualNormJs,
  gatedGelu: gatedGeluJs,
  roundBf16: roundBf16Js,
  argmaxRows: argmaxRowsJs,
  vocabPartials: vocabPartialsJs,
  normRope: normRopeJs,
};
