// One arithmetic on every path (engine/native/arithmetic.h): each instruction-set path the CPU runs (portable, AVX2,
// AVX-512, and AMX where its probe admits it) gives the JavaScript oracle's bits, op by op, in both precisions, at
// several shapes, batch sizes and thread counts; the tile order of the products is checked on cases that tell it from
// its neighbours. The paths that ran are printed, so a CI log says which this machine checked.
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { f32ToBf16 } from '../../engine/bf16.ts';
import {
  attendChunk,
  attendDecode,
  argmaxRows,
  gatedGelu,
  gatedProducts,
  ISAS,
  jsKernels,
  kernelInfo,
  nativeKernels,
  normRope,
  products,
  residualNorm,
  rmsNorm,
  roundBf16,
  setKernelThreads,
  useIsa,
  vocabPartials,
  type DecodeAttentionShape,
  type KernelImpl,
  type ProductMode,
} from '../../engine/kernels.ts';
import { seededRandom } from '../fixtures.ts';

const nativeOff = process.env.IWIBENCH_NATIVE === '0';
const info = kernelInfo();
const paths = nativeOff ? [] : info.available.filter((isa) => isa !== 'javascript');
const inForce = info.isa;

beforeAll(() => {
  process.stderr.write(
    `arithmetic: bitwise battery on ${paths.length ? paths.join(', ') : 'no native path'} against the JavaScript oracle` +
      ` (CPU: ${os.cpus()[0]?.model ?? 'unknown'}; AMX: ${info.amx})\n`,
  );
});
afterAll(() => {
  if (!nativeOff) useIsa(inForce);
  setKernelThreads(os.availableParallelism());
});

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);
/** Bits, with every NaN one pattern (paths may propagate different payloads; a NaN stays a NaN everywhere). */
const canonical = (a: Float32Array) => Array.from(bits(a), (b, i) => (Number.isNaN(a[i]) ? 0x7fc00000 : b));

/** Values over many decades with both signs: the orders of sums then differ in their roundings. */
function values(n: number, seed: number, decades = 24): Float32Array {
  const random = seededRandom(seed);
  return Float32Array.from({ length: n }, () => (random() - 0.5) * 2 ** Math.floor(random() * decades - decades / 2));
}

// Values no model should hold but a patch can cause (overflow to ±∞, then NaN), and the denormals and signed zeros
// that flush or keep their sign: a fraction `rate` of an array's values replaced by them.
const SPECIALS = [Infinity, -Infinity, NaN, 2 ** -140, -(2 ** -149), 2 ** -126, -0, 0, 3e38, -3e38];
function sprinkle(a: Float32Array, rate: number, seed: number): Float32Array {
  const random = seededRandom(seed);
  for (let i = 0; i < a.length; i++) if (random() < rate) a[i] = SPECIALS[Math.floor(random() * SPECIALS.length)]!;
  return a;
}

function productCase(m: number, widths: number[], k: number, seed: number) {
  return { x: values(m * k, seed), ws: widths.map((n, p) => f32ToBf16(values(n * k, seed * 31 + p))) };
}

function run(impl: KernelImpl, c: { x: Float32Array; ws: Uint16Array[] }, m: number, k: number, mode: ProductMode) {
  const outs = c.ws.map((w) => new Float32Array((m * w.length) / k).fill(NaN));
  products(c.x, c.ws, outs, m, k, mode, impl);
  return outs.map(canonical);
}

const MODES: [string, ProductMode][] = [
  ['float32', { bf16: false, roundOutput: false }],
  ['bf16', { bf16: true, roundOutput: true }],
  ['bf16, float32 outputs (the head)', { bf16: true, roundOutput: false }],
];

describe('the tile order (the JavaScript oracle)', () => {
  const one = (x: number[], w: number[], mode: ProductMode) => {
    const out = new Float32Array(1);
    products(Float32Array.from(x), [f32ToBf16(Float32Array.from(w))], [out], 1, x.length, mode, jsKernels);
    return out[0]!;
  };
  const f32: ProductMode = { bf16: false, roundOutput: false };

  it('sums the even and the odd k of a block in chains of their own, then adds them', () => {
    // 2^24 + 1 + 1: one chain gives 2^24 (each +1 is lost), the even and odd chains 2^24 and 1 + … (then 2^24 + 2).
    expect(one([2 ** 24, 1, 0, 1], [1, 1, 1, 1], f32)).toBe(2 ** 24 + 2);
    expect(one([2 ** 24, 0, 1, 0, 1], [1, 1, 1, 1, 1], f32)).toBe(2 ** 24);
  });

  it('adds each block of 32 k to the accumulator after its own chains', () => {
    // Block 0 holds 2^24, block 1 two ones in its even chain: 1 + 1 = 2 is added whole, 2^24 + 2 exactly.
    const x = new Array(64).fill(0);
    const w = new Array(64).fill(1);
    x[0] = 2 ** 24;
    x[32] = 1;
    x[34] = 1;
    expect(one(x, w, f32)).toBe(2 ** 24 + 2);
    // Within one block the same ones go one at a time into the even chain and are lost.
    const inOne = new Array(32).fill(0);
    inOne[0] = 2 ** 24;
    inOne[2] = 1;
    inOne[4] = 1;
    expect(one(inOne, w.slice(0, 32), f32)).toBe(2 ** 24);
  });

  it('fuses each multiply-add (one rounding), and in bf16 rounds x first and flushes denormals', () => {
    // a·b + c rounded once: the naive product-then-sum would round twice.
    const [a, b, c] = [5237765 * 2 ** -23, 205 * 2 ** -7, 2 ** 24];
    expect(one([c, 0, a], [1, 0, b], f32)).toBe(2 ** 24 + 2);
    expect(one([1 + 2 ** -20], [1], f32)).toBe(1 + 2 ** -20);
    expect(one([1 + 2 ** -20], [1], { bf16: true, roundOutput: false })).toBe(1);
    expect(one([2 ** -70], [2 ** -70], f32)).toBe(2 ** -140);
    expect(one([2 ** -70], [2 ** -70], { bf16: true, roundOutput: false })).toBe(0);
    expect(one([2 ** -130], [1], { bf16: true, roundOutput: false })).toBe(0);
  });
});

describe.skipIf(nativeOff)('every path the CPU runs gives the oracle’s bits', () => {
  it.each(MODES)(
    'products (%s): shapes with partial blocks, tiles and panels, several parts, each row alone',
    (_, mode) => {
      const shapes: [number, number[], number][] = [
        [1, [50], 1153],
        [3, [17, 40], 33],
        [7, [77, 5], 300],
        [41, [64, 33], 7],
        [130, [48], 520],
      ];
      for (const [m, widths, k] of shapes) {
        const c = productCase(m, widths, k, m * 1000 + k);
        const expected = run(jsKernels, c, m, k, mode);
        for (const isa of paths) {
          useIsa(isa);
          expect(run(nativeKernels()!, c, m, k, mode), `${isa} m=${m} k=${k}`).toEqual(expected);
          // A row alone gives its row of the batch.
          const r = m - 1;
          const alone = run(nativeKernels()!, { x: c.x.subarray(r * k, (r + 1) * k), ws: c.ws }, 1, k, mode);
          alone.forEach((out, p) => expect(out).toEqual(expected[p]!.slice(r * widths[p]!, (r + 1) * widths[p]!)));
        }
      }
    },
  );

  it.each(MODES)('products (%s): infinities, NaN, denormals and signed zeros', (_, mode) => {
    const specials = [...SPECIALS, 1, -1];
    const random = seededRandom(11);
    const pick = () =>
      random() < 0.04 ? specials[Math.floor(random() * specials.length)]! : (random() - 0.5) * 2 ** -62;
    const [m, n, k] = [5, 19, 70];
    const c = {
      x: Float32Array.from({ length: m * k }, pick),
      ws: [f32ToBf16(Float32Array.from({ length: n * k }, pick))],
    };
    const expected = run(jsKernels, c, m, k, mode);
    for (const isa of paths) {
      useIsa(isa);
      expect(run(nativeKernels()!, c, m, k, mode), isa).toEqual(expected);
    }
  });

  it('products: the same bits with 1, 2 and 3 threads on every path', () => {
    const [m, k] = [9, 700];
    const c = productCase(m, [96, 40], k, 5);
    for (const [, mode] of MODES) {
      const expected = run(jsKernels, c, m, k, mode);
      for (const isa of paths) {
        useIsa(isa);
        for (const threads of [1, 2, 3]) {
          setKernelThreads(threads);
          expect(run(nativeKernels()!, c, m, k, mode), `${isa} ${threads} threads`).toEqual(expected);
        }
      }
    }
    setKernelThreads(os.availableParallelism());
  });

  it.runIf(paths.includes('amx'))('gatedProducts on AMX: the products then gatedGelu, bit for bit', () => {
    useIsa('amx');
    const [m, n, k] = [70, 45, 96];
    const c = productCase(m, [n, n], k, 9);
    const [gate, up] = c.ws.map(() => new Float32Array(m * n));
    products(c.x, c.ws, [gate!, up!], m, k, { bf16: true, roundOutput: true });
    const expected = new Float32Array(m * n);
    gatedGelu(gate!, up!, expected, jsKernels);
    const z = new Float32Array(m * n);
    gatedProducts(c.x, c.ws[0]!, c.ws[1]!, z, m, k, true);
    expect(canonical(z)).toEqual(canonical(expected));
  });

  const shape = (window: number, bf16Probabilities: boolean): DecodeAttentionShape => ({
    heads: 4,
    kvHeads: 2,
    headDim: 64,
    scaling: 0.125,
    window,
    bf16Probabilities,
  });

  // A key of 3e38s makes its scores ±∞ (the maximum then ∞, and ∞ − ∞ a NaN), a key, a value or a query of NaNs
  // reaches some outputs and not others: every path must give each output the oracle's NaN, infinity or number.
  const poison = (a: Float32Array, D: number, at: number, value: number) => a.fill(value, at * D, at * D + D);

  it.each([
    ['full, float32', shape(0, false), false],
    ['sliding, bf16', shape(5, true), false],
    ['full, float32, infinite scores and NaNs', shape(0, false), true],
    ['sliding, bf16, infinite scores and NaNs', shape(5, true), true],
  ])('attention in decode and in chunks (%s)', (_, s, specials) => {
    const D = s.headDim;
    const random = seededRandom(3);
    const floats = (n: number) => Float32Array.from({ length: n }, () => (random() - 0.5) * 4);
    // Decode: three rows over caches of their own (ring order, empty slots).
    const rows = [6, 9, 1].map((S, r) => ({
      pastKey: floats(s.kvHeads * S * D),
      pastValue: floats(s.kvHeads * S * D),
      slots: Int32Array.from({ length: S }, (_, i) => (i === 1 ? -1 : (i * 5) % S)),
      position: S + r,
    }));
    const R = rows.length;
    const decode = (impl: KernelImpl) => {
      const out = new Float32Array(R * s.heads * D);
      attendDecode(q, k, v, out, rows, s, impl);
      return canonical(out);
    };
    const q = floats(R * s.heads * D);
    const k = floats(R * s.kvHeads * D);
    const v = floats(R * s.kvHeads * D);
    // A chunk of 11 tokens after 7 slots.
    const T = 11;
    const past = {
      key: floats(s.kvHeads * 7 * D),
      value: floats(s.kvHeads * 7 * D),
      slots: Int32Array.of(0, 1, -1, 3, 4, 5, 6),
    };
    const cq = floats(T * s.heads * D);
    const ck = floats(T * s.kvHeads * D);
    const cv = floats(T * s.kvHeads * D);
    const positions = Int32Array.from({ length: T }, (_, t) => 7 + t);
    if (specials) {
      poison(rows[0]!.pastKey, D, 3, 3e38); // row 0, KV head 0: a cached key of 3e38s
      poison(rows[1]!.pastValue, D, 2 * 9 - 4, NaN); // row 1, KV head 1: a cached value of NaNs
      poison(q, D, 2 * s.heads + 1, NaN); // row 2, head 1: a query of NaNs
      poison(past.key, D, 7 + 4, 3e38); // KV head 1: a cached key of 3e38s
      poison(ck, D, 2 * 9, 3e38); // token 9, KV head 0: a key of 3e38s
      poison(ck, D, 2 * 3 + 1, NaN); // token 3, KV head 1: a key of NaNs
      poison(cq, D, 6 * s.heads + 2, NaN); // token 6, head 2: a query of NaNs
    }
    const chunk = (impl: KernelImpl) => {
      const out = new Float32Array(T * s.heads * D);
      attendChunk(cq, ck, cv, out, past, positions, s, impl);
      return canonical(out);
    };
    const expected = [decode(jsKernels), chunk(jsKernels)];
    if (specials)
      for (const out of expected) {
        const finite = out.filter((b) => (b & 0x7f800000) !== 0x7f800000).length;
        expect(finite, 'some outputs numbers').toBeGreaterThan(0);
        expect(finite, 'some outputs NaN or infinite').toBeLessThan(out.length);
      }
    for (const isa of paths) {
      useIsa(isa);
      for (const threads of [1, 2]) {
        setKernelThreads(threads);
        expect([decode(nativeKernels()!), chunk(nativeKernels()!)], `${isa} ${threads} threads`).toEqual(expected);
      }
    }
    setKernelThreads(os.availableParallelism());
  });

  it.each([
    ['finite values', 0],
    ['infinities, NaN, denormals and signed zeros', 1],
  ])('norms, RoPE, the gated GELU, the rounding to BF16 and the greedy choice (%s)', (_, specials) => {
    const H = 100;
    const rowsN = 19;
    // Norms: a special in a few rows (one makes its row's every output NaN or zero); elementwise ops: many.
    const h0 = sprinkle(values(rowsN * H, 1, 8), 0.004 * specials, 21);
    const a = sprinkle(values(rowsN * H, 2, 8), 0.004 * specials, 22);
    const gate = sprinkle(values(rowsN * H, 2, 8), 0.1 * specials, 23);
    const post = values(H, 3, 2);
    const next = values(H, 4, 2);
    const pointwise = (impl: KernelImpl) => {
      const h = h0.slice();
      const y = new Float32Array(h.length);
      residualNorm(h, a, post, next, y, 1e-6, true, impl);
      const normed = new Float32Array(h.length);
      rmsNorm(a, post, normed, 1e-6, impl);
      const heads = sprinkle(values(3 * 2 * 16, 5, 6), 0.01 * specials, 24);
      const half = Float32Array.from({ length: 3 * 8 }, (_, i) => Math.cos(i));
      const sin = Float32Array.from({ length: 3 * 8 }, (_, i) => Math.sin(i));
      normRope(heads, values(16, 6, 2), half, sin, 2, 1e-6, impl);
      const z = new Float32Array(a.length);
      gatedGelu(gate, h0, z, impl);
      const rounded = gate.slice();
      roundBf16(rounded, impl);
      const logits = sprinkle(values(7 * 1000, 8, 6), 0.002 * specials, 25);
      logits[3 * 1000 + 17] = logits[3 * 1000 + 400] = 1e30; // ties: the first index
      if (specials) logits.fill(NaN, 5 * 1000, 6 * 1000); // a row of NaNs
      const choice = new Int32Array(7);
      argmaxRows(logits, 1000, choice, impl);
      return [
        canonical(h),
        canonical(y),
        canonical(normed),
        canonical(heads),
        canonical(z),
        canonical(rounded),
        Array.from(choice),
      ];
    };
    const expected = pointwise(jsKernels);
    for (const isa of paths) {
      useIsa(isa);
      expect(pointwise(nativeKernels()!), isa).toEqual(expected);
    }
  });
  it('the head’s log-softmax parts: chunk maxima and sums, the top k carried across blocks, specials, 1–3 threads', () => {
    // Chunks of 40 (a tail of 8 past 16-wide vectors, then of 4 past 8-wide ones), a last chunk of 27, ties across
    // chunks and blocks, and the values the floor at −87 catches.
    const [rows, n, chunk] = [6, 147, 40];
    const logits = values(rows * n, 9, 6);
    logits.set([NaN, Infinity, -Infinity, -0, 0, NaN], 2 * n + 3);
    logits.fill(-Infinity, 3 * n, 3 * n + 60); // a chunk with no value above −∞, then one with some
    logits.fill(NaN, 4 * n + 40, 4 * n + 80);
    logits.fill(-0, 5 * n, 6 * n); // every value a zero: maxima of both signs, ties everywhere
    logits[5 * n + 90] = 0;
    logits[n + 5] = logits[n + 45] = logits[n + 130] = 1e3; // ties in three chunks, two blocks: the lower ids first
    const chunks = (width: number) => Math.ceil(width / chunk);
    const parts = (impl: KernelImpl, k: number) => {
      const top = new Float32Array(rows * k).fill(-Infinity);
      const ids = new Int32Array(rows * k).fill(-1);
      const out: number[][] = [];
      for (const [n0, width] of [
        [0, 80],
        [80, 67],
      ] as const) {
        const block = Float32Array.from(
          { length: rows * width },
          (_, i) => logits[Math.floor(i / width) * n + n0 + (i % width)]!,
        );
        const max = new Float32Array(rows * chunks(width)).fill(NaN);
        const sum = new Float32Array(rows * chunks(width)).fill(NaN);
        vocabPartials(block, width, chunk, max, sum, top, ids, 1000 + n0, impl);
        out.push(canonical(max), canonical(sum));
      }
      return [...out, canonical(top), Array.from(ids)];
    };
    for (const k of [0, 1, 5]) {
      const expected = parts(jsKernels, k);
      for (const isa of paths)
        for (const threads of [1, 2, 3]) {
          useIsa(isa);
          setKernelThreads(threads);
          expect(parts(nativeKernels()!, k), `${isa} k=${k} ${threads} threads`).toEqual(expected);
        }
    }
    setKernelThreads(os.availableParallelism());
    // What the oracle itself gives: every sum within [1, chunk], the tied 1e3s in id order.
    const top = new Float32Array(3).fill(-Infinity);
    const ids = new Int32Array(3).fill(-1);
    const max = new Float32Array(chunks(n));
    const sum = new Float32Array(chunks(n));
    vocabPartials(logits.subarray(n, 2 * n), n, chunk, max, sum, top, ids, 0, jsKernels);
    expect(Array.from(ids)).toEqual([5, 45, 130]);
    for (const s of sum) expect(s >= 1 && s <= chunk).toBe(true);
  });
});

describe.skipIf(nativeOff)('choosing the path', () => {
  it('refuses a path above what the CPU runs, or none, with a clear error, and keeps the one in force', () => {
    const before = kernelInfo().isa;
    const above = ISAS.find((isa) => !info.available.includes(isa));
    if (above) expect(() => useIsa(above)).toThrow(new RegExp(`IWIBENCH_ISA: ${above} is above what this CPU runs`));
    expect(() => useIsa('sse9')).toThrow(/names no path/);
    expect(kernelInfo().isa).toBe(before);
  });
});
