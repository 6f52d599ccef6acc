// A prefill chunk's attention (engine/kernels.ts attendChunk): one sequence's T queries over its cache's slots and the
// chunk's own keys, against a double-precision reference of Gemma3Attention's causal masked softmax (sliding window
// included; with BF16 probabilities, bf16 precision's); the addon equal to the fallback with 1 and 2 threads, on the
// vector paths (head_dim a multiple of 64) and off them; a query's result the same whatever later tokens the chunk
// holds, and however the prompt is chunked; bad arguments refused, out untouched.
import { afterAll, describe, expect, it } from 'vitest';
import {
  attendChunk,
  jsKernels,
  roundBf16,
  roundToBf16,
  nativeKernels,
  setKernelThreads,
  type ChunkPast,
  type DecodeAttentionShape,
  type KernelImpl,
} from '../../engine/kernels.ts';
import { relativeError, sameBits, seededRandom } from '../fixtures.ts';

const nativeOff = process.env.IWIBENCH_NATIVE === '0';

type Case = { queries: Float32Array; keys: Float32Array; values: Float32Array; past: ChunkPast; positions: Int32Array };

/**
 * A chunk of T tokens from position `start`, after a cache of S slots: held positions before the chunk in ring order,
 * empty slots (−1), and slots holding positions the chunk will write (not yet visible).
 */
function makeCase(T: number, S: number, shape: DecodeAttentionShape, seed: number): Case {
  const random = seededRandom(seed);
  const floats = (n: number) => Float32Array.from({ length: n }, () => (random() - 0.5) * 4);
  const { heads, kvHeads, headDim: D } = shape;
  const start = S > 0 ? S - 3 : 0;
  const slots = Int32Array.from({ length: S }, (_, s) => (s === 1 ? -1 : s === 2 ? start + 5 : (s * 7) % start));
  return {
    queries: floats(T * heads * D),
    keys: floats(T * kvHeads * D),
    values: floats(T * kvHeads * D),
    past: { key: floats(kvHeads * S * D), value: floats(kvHeads * S * D), slots },
    positions: Int32Array.from({ length: T }, (_, t) => start + t),
  };
}

function attend(c: Case, shape: DecodeAttentionShape, impl?: KernelImpl): Float32Array {
  const out = new Float32Array(c.queries.length).fill(NaN);
  attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, shape, impl);
  return out;
}

/**
 * softmax(q·k · scaling over the visible keys) · v in doubles, for every query and head; with bf16Probabilities each
 * probability rounded to float32 and then to BF16 first.
 */
function reference(c: Case, shape: DecodeAttentionShape): Float64Array {
  const { heads, kvHeads, headDim: D, scaling, window } = shape;
  const weight = (p: number) => (shape.bf16Probabilities ? roundToBf16(p) : p);
  const out = new Float64Array(c.queries.length);
  const S = c.past.slots.length;
  c.positions.forEach((p, t) => {
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / (heads / kvHeads));
      const keys: [Float32Array, Float32Array, number, number][] = [];
      for (let s = 0; s < S; s++) keys.push([c.past.key, c.past.value, (g * S + s) * D, c.past.slots[s]!]);
      c.positions.forEach((kp, j) => keys.push([c.keys, c.values, (j * kvHeads + g) * D, kp]));
      const seen = keys.filter(([, , , kp]) => kp >= 0 && kp <= p && (window === 0 || p - kp < window));
      const q = (t * heads + h) * D;
      const scores = seen.map(([k, , o]) => {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += c.queries[q + d]! * k[o + d]!;
        return dot * scaling;
      });
      const max = Math.max(...scores);
      const e = scores.map((s) => Math.exp(s - max));
      const sum = e.reduce((a, b) => a + b, 0);
      seen.forEach(([, v, o], i) => {
        const p = weight(e[i]! / sum);
        for (let d = 0; d < D; d++) out[q + d] += p * v[o + d]!;
      });
    }
  });
  return out;
}

/**
 * How far a result with BF16 probabilities may lie from the double reference that rounds them too: a probability
 * computed in float32 can land on the other side of a BF16 rounding boundary, moving by half a BF16 step (2⁻⁹).
 */
const BF16_HALF_STEP = 2 ** -9;

const SHAPES: [string, DecodeAttentionShape][] = [
  ['1B heads (4 on 1 KV head, head_dim 256), full', { heads: 4, kvHeads: 1, headDim: 256, scaling: 0.0625, window: 0 }],
  ['4B heads (8 on 4), sliding window 16', { heads: 8, kvHeads: 4, headDim: 64, scaling: 0.125, window: 16 }],
  [
    'tiny heads (4 on 1, head_dim 16, tiles padded to 32 d), sliding window 8',
    { heads: 4, kvHeads: 1, headDim: 16, scaling: 0.25, window: 8 },
  ],
  ['2 heads on 2, head_dim 48 (tiles padded to 64 d)', { heads: 2, kvHeads: 2, headDim: 48, scaling: 0.2, window: 0 }],
  ['3 heads on 1, head_dim 20 (off the vector paths)', { heads: 3, kvHeads: 1, headDim: 20, scaling: 0.25, window: 9 }],
];

describe.each(SHAPES)('attendChunk: %s', (_, shape) => {
  const c = makeCase(37, 21, shape, shape.headDim + shape.heads);

  it('matches a double-precision reference within float32 rounding', () => {
    for (const impl of [jsKernels, ...(nativeOff ? [] : [nativeKernels()!])])
      expect(relativeError(attend(c, shape, impl), Float32Array.from(reference(c, shape)))).toBeLessThan(1e-5);
  });

  it.skipIf(nativeOff)('gives the fallback’s bits with 1 and 2 threads', () => {
    const fallback = attend(c, shape, jsKernels);
    try {
      for (const threads of [1, 2]) {
        setKernelThreads(threads);
        expect(sameBits(attend(c, shape, nativeKernels()), fallback)).toBe(true);
      }
    } finally {
      setKernelThreads(2);
    }
  });

  it('with BF16 probabilities: near the reference so rounded, rounded indeed, the fallback’s bits', () => {
    const rounded = { ...shape, bf16Probabilities: true };
    const fallback = attend(c, rounded, jsKernels);
    expect(relativeError(fallback, Float32Array.from(reference(c, rounded)))).toBeLessThan(BF16_HALF_STEP);
    expect(sameBits(fallback, attend(c, shape, jsKernels))).toBe(false);
    if (!nativeOff) expect(sameBits(attend(c, rounded, nativeKernels()), fallback)).toBe(true);
  });

  it('gives a query the same bits whatever later tokens the chunk holds (causal)', () => {
    const T = 11;
    const { heads, kvHeads, headDim: D } = shape;
    const short: Case = {
      ...c,
      queries: c.queries.slice(0, T * heads * D),
      keys: c.keys.slice(0, T * kvHeads * D),
      values: c.values.slice(0, T * kvHeads * D),
      positions: c.positions.slice(0, T),
    };
    expect(sameBits(attend(short, shape), attend(c, shape).subarray(0, T * heads * D))).toBe(true);
  });
});

afterAll(() => setKernelThreads(2));

describe('attendChunk over a prompt chunked differently', () => {
  // bf16 precision's shapes: queries, keys and values BF16 values, the probabilities rounded.
  const shapes = SHAPES.map(
    ([name, shape]) => [name, { ...shape, bf16Probabilities: true }] as [string, DecodeAttentionShape],
  );
  /** A case as bf16 precision holds it: queries, keys and values BF16 values, as the products leave them. */
  const bf16Case = (T: number, S: number, shape: DecodeAttentionShape) => {
    const c = makeCase(T, S, shape, shape.headDim + T);
    for (const array of [c.queries, c.keys, c.values, c.past.key, c.past.value]) roundBf16(array);
    return c;
  };

  it.each(shapes)('%s: a prompt in one chunk or two gives each query the same result', (_, shape) => {
    const { heads, kvHeads, headDim: D } = shape;
    const whole = bf16Case(37, 0, shape);
    const split = 20;
    // The first 20 tokens in the cache (positions 0 … 19 in slot order, [kvHeads × S × D]), the rest as the chunk.
    const cached = (array: Float32Array) => {
      const out = new Float32Array(kvHeads * split * D);
      for (let g = 0; g < kvHeads; g++)
        for (let s = 0; s < split; s++)
          out.set(array.subarray((s * kvHeads + g) * D, (s * kvHeads + g + 1) * D), (g * split + s) * D);
      return out;
    };
    const second: Case = {
      queries: whole.queries.slice(split * heads * D),
      keys: whole.keys.slice(split * kvHeads * D),
      values: whole.values.slice(split * kvHeads * D),
      past: {
        key: cached(whole.keys),
        value: cached(whole.values),
        slots: Int32Array.from({ length: split }, (_, s) => s),
      },
      positions: whole.positions.slice(split),
    };
    expect(sameBits(attend(second, shape), attend(whole, shape).subarray(split * heads * D))).toBe(true);
  });
});

it('attendChunk refuses bad arguments with a clear error, out untouched (wrapper and addon)', () => {
  const shape = SHAPES[4]![1];
  const c = makeCase(4, 5, shape, 1);
  const out = new Float32Array(c.queries.length).fill(7);
  const cases: [() => void, RegExp][] = [
    [() => attendChunk(c.queries.subarray(1), c.keys, c.values, out, c.past, c.positions, shape), /queries.length/],
    [
      () => attendChunk(c.queries, c.keys, c.values, out, { ...c.past, slots: new Int32Array(2) }, c.positions, shape),
      /past.key/,
    ],
    [() => attendChunk(c.queries, c.keys, c.values, out, c.past, Int32Array.of(0, 1, -1, 3), shape), /each ≥ 0/],
    [() => attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, { ...shape, kvHeads: 2 }), /multiple/],
    [() => attendChunk(c.queries, c.keys, c.values, c.queries, c.past, c.positions, shape), /share memory/],
    [
      () =>
        attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, { ...shape, bf16Probabilities: 1 as never }),
      /bf16Probabilities must be a boolean/,
    ],
  ];
  for (const [call, message] of cases) expect(call).toThrow(message);
  if (!nativeOff) {
    const addon = nativeKernels()!;
    const args = [shape.heads, shape.kvHeads, shape.headDim, shape.scaling, shape.window, false] as const;
    const { key, value, slots } = c.past;
    expect(() =>
      addon.attendChunk(c.queries, c.keys, c.values, out, key, value, slots, Int32Array.of(0, 1, 2, -3), ...args),
    ).toThrow(/positions must be ≥ 0/);
    expect(() =>
      addon.attendChunk(c.queries, c.keys, c.values, out, key.subarray(1), value, slots, c.positions, ...args),
    ).toThrow(/pastKey and pastValue/);
  }
  expect(out.every((v) => v === 7)).toBe(true);
});
