// Decode attention (engine/kernels.ts attendDecode): rows of one new token, each over its own cache, against a
// double-precision reference of Gemma3Attention's masked softmax (and with BF16 probabilities, bf16 precision's); each
// row bitwise the same alone as among others and with any thread count; the addon equal to the fallback; bad
// arguments refused before anything is written.
import { afterAll, describe, expect, it } from 'vitest';
import {
  attendDecode,
  jsKernels,
  roundToBf16,
  nativeKernels,
  setKernelThreads,
  type DecodeAttentionRow,
  type DecodeAttentionShape,
  type KernelImpl,
} from '../../engine/kernels.ts';
import { seededRandom } from '../fixtures.ts';

const nativeOff = process.env.IWIBENCH_NATIVE === '0';
const SHAPE: DecodeAttentionShape = { heads: 4, kvHeads: 2, headDim: 20, scaling: 0.25, window: 0 };

type Case = { queries: Float32Array; keys: Float32Array; values: Float32Array; rows: DecodeAttentionRow[] };

/**
 * Rows with caches of their own sizes: slots holding positions in a ring (as the sliding layers' caches), empty slots
 * (−1), and slots holding positions after the row's (never attended).
 */
function makeCase(R: number, seed: number, shape = SHAPE): Case {
  const random = seededRandom(seed);
  const floats = (n: number) => Float32Array.from({ length: n }, () => (random() - 0.5) * 4);
  const { heads, kvHeads, headDim: D } = shape;
  const rows = Array.from({ length: R }, (_, r): DecodeAttentionRow => {
    const S = 3 + ((r * 7 + seed) % 13);
    const position = 2 + ((r * 5 + seed) % 17);
    const slots = Int32Array.from({ length: S }, (_, s) => {
      const pick = random();
      return pick < 0.15 ? -1 : pick < 0.25 ? position + 1 + s : (s * 3 + r) % (position + 1);
    });
    return { pastKey: floats(kvHeads * S * D), pastValue: floats(kvHeads * S * D), slots, position };
  });
  return { queries: floats(R * heads * D), keys: floats(R * kvHeads * D), values: floats(R * kvHeads * D), rows };
}

function attend(c: Case, impl: KernelImpl, shape = SHAPE): Float32Array {
  const out = new Float32Array(c.queries.length).fill(NaN);
  attendDecode(c.queries, c.keys, c.values, out, c.rows, shape, impl);
  return out;
}

/** softmax(q·k · scaling over the visible keys) · v in doubles, for every row and head (bf16Probabilities: rounded). */
function reference(c: Case, shape = SHAPE): Float64Array {
  const { heads, kvHeads, headDim: D, scaling, window } = shape;
  const out = new Float64Array(c.queries.length);
  c.rows.forEach((row, r) => {
    const S = row.slots.length;
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / (heads / kvHeads));
      const keys: [Float32Array, number][] = [];
      const values: [Float32Array, number][] = [];
      for (let s = 0; s < S; s++) {
        const p = row.slots[s]!;
        if (p < 0 || p > row.position || (window > 0 && row.position - p >= window)) continue;
        keys.push([row.pastKey, (g * S + s) * D]);
        values.push([row.pastValue, (g * S + s) * D]);
      }
      keys.push([c.keys, (r * kvHeads + g) * D]);
      values.push([c.values, (r * kvHeads + g) * D]);
      const q = (r * heads + h) * D;
      const scores = keys.map(([k, o]) => {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += c.queries[q + d]! * k[o + d]!;
        return dot * scaling;
      });
      const max = Math.max(...scores);
      const e = scores.map((s) => Math.exp(s - max));
      const sum = e.reduce((a, b) => a + b, 0);
      values.forEach(([v, o], i) => {
        const p = shape.bf16Probabilities ? roundToBf16(e[i]! / sum) : e[i]! / sum;
        for (let d = 0; d < D; d++) out[q + d] += p * v[o + d]!;
      });
    }
  });
  return out;
}

const bits = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));
const maxError = (a: Float32Array, b: Float64Array) => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i]!)));

/** Row r of a case as a case of its own. */
function alone(c: Case, r: number, shape = SHAPE): Case {
  const part = (a: Float32Array, width: number) => a.slice(r * width, (r + 1) * width);
  return {
    queries: part(c.queries, shape.heads * shape.headDim),
    keys: part(c.keys, shape.kvHeads * shape.headDim),
    values: part(c.values, shape.kvHeads * shape.headDim),
    rows: [c.rows[r]!],
  };
}

const impls: [string, () => KernelImpl][] = [
  ['fallback', () => jsKernels],
  ...(nativeOff ? [] : ([['native addon', () => nativeKernels()!]] as [string, () => KernelImpl][])),
];

for (const [name, impl] of impls) {
  describe(`attendDecode (${name})`, () => {
    afterAll(() => setKernelThreads(2));

    it('matches a double-precision masked softmax, full and sliding (window 4), 1 to 3 query heads per KV head', () => {
      for (const shape of [SHAPE, { ...SHAPE, window: 4 }, { ...SHAPE, heads: 6 }, { ...SHAPE, kvHeads: 4 }]) {
        const c = makeCase(9, 3, shape);
        const error = maxError(attend(c, impl(), shape), reference(c, shape));
        expect(error).toBeLessThan(1e-5);
      }
      // The window hides keys the full layer sees: the outputs differ.
      const c = makeCase(9, 3);
      expect(bits(attend(c, impl(), { ...SHAPE, window: 4 }))).not.toEqual(bits(attend(c, impl())));
    });

    it('with BF16 probabilities (bf16 precision): near the reference that rounds them too, and not the float32 result', () => {
      const rounded = { ...SHAPE, bf16Probabilities: true };
      const c = makeCase(9, 3, rounded);
      const out = attend(c, impl(), rounded);
      // A probability computed in float32 may land on the other side of a BF16 boundary: half a BF16 step, 2⁻⁹.
      expect(maxError(out, reference(c, rounded))).toBeLessThan(2 ** -9);
      expect(bits(out)).not.toEqual(bits(attend(c, impl())));
    });

    it('gives every row bitwise what it gives alone, with 1, 2 and 3 threads', () => {
      const c = makeCase(11, 5);
      setKernelThreads(1);
      const one = attend(c, impl());
      for (const threads of [2, 3]) {
        setKernelThreads(threads);
        expect(bits(attend(c, impl()))).toEqual(bits(one));
      }
      const width = SHAPE.heads * SHAPE.headDim;
      for (let r = 0; r < c.rows.length; r++)
        expect(bits(attend(alone(c, r), impl()))).toEqual(bits(one.slice(r * width, (r + 1) * width)));
    });

    it('refuses bad arguments with a clear error and writes nothing', () => {
      const c = makeCase(2, 1);
      const out = new Float32Array(c.queries.length).fill(42);
      const call = (overrides: Partial<Case & { out: Float32Array; shape: DecodeAttentionShape }>) => () =>
        attendDecode(
          overrides.queries ?? c.queries,
          overrides.keys ?? c.keys,
          overrides.values ?? c.values,
          overrides.out ?? out,
          overrides.rows ?? c.rows,
          overrides.shape ?? SHAPE,
          impl(),
        );
      expect(call({ shape: { ...SHAPE, kvHeads: 3 } })).toThrow(/not a multiple of kvHeads/);
      expect(call({ shape: { ...SHAPE, window: -1 } })).toThrow(/window must be an integer/);
      expect(call({ shape: { ...SHAPE, scaling: NaN } })).toThrow(/scaling must be finite/);
      expect(call({ queries: c.queries.subarray(1) })).toThrow(/queries.length/);
      expect(call({ rows: [] })).toThrow(/at least one row/);
      expect(call({ rows: [c.rows[0]!, { ...c.rows[1]!, slots: c.rows[1]!.slots.subarray(1) }] })).toThrow(
        /kvHeads·S·D/,
      );
      expect(call({ rows: [c.rows[0]!, { ...c.rows[1]!, position: -1 }] })).toThrow(/position must be/);
      expect(call({ out: c.queries })).toThrow(/must not share memory/);
      expect(Array.from(new Set(out))).toEqual([42]);
    });
  });
}

describe.skipIf(nativeOff)('attendDecode: the addon', () => {
  it('equals the fallback bit for bit, and checks its arguments itself below the wrapper', () => {
    for (const [R, seed] of [
      [1, 2],
      [7, 9],
      [16, 4],
    ] as const) {
      const c = makeCase(R, seed);
      const shapes = [SHAPE, { ...SHAPE, window: 3 }, { ...SHAPE, headDim: 256, kvHeads: 1 }];
      for (const shape of [...shapes, { ...SHAPE, bf16Probabilities: true }]) {
        const d = shape.headDim === SHAPE.headDim ? c : makeCase(R, seed, shape);
        expect(bits(attend(d, nativeKernels()!, shape))).toEqual(bits(attend(d, jsKernels, shape)));
      }
    }
    const c = makeCase(2, 1);
    const out = new Float32Array(c.queries.length).fill(42);
    const raw = nativeKernels()!.attendDecode as unknown as (...args: unknown[]) => void;
    const args = [c.queries, c.keys, c.values, out, c.rows.map((r) => r.pastKey), c.rows.map((r) => r.pastValue)];
    const positions = Int32Array.from(c.rows, (r) => r.position);
    const slots = c.rows.map((r) => r.slots);
    expect(() => raw(...args, slots.slice(1), positions, 4, 2, 20, 0.25, 0, false)).toThrow(/arrays of R entries/);
    expect(() => raw(...args, slots, positions, 4, 3, 20, 0.25, 0, false)).toThrow(/multiple of kvHeads/);
    expect(() => raw(...args, slots, positions, 4, 2, 20, 0.25, 0)).toThrow(/14 arguments/);
    expect(() => raw(...args, slots, positions, 4, 2, 20, 0.25, 0, 1)).toThrow(/bf16Probabilities must be a boolean/);
    expect(() =>
      raw(c.queries, c.keys, c.values, c.queries, ...args.slice(4), slots, positions, 4, 2, 20, 0.25, 0, false),
    ).toThrow(/share memory/);
    expect(Array.from(new Set(out))).toEqual([42]);
  });
});
