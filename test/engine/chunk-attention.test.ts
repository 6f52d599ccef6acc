// A prefill chunk's attention (engine/kernels.ts attendChunk): one sequence's T queries over its cache's slots and the
// chunk's own keys, against a double-precision reference of Gemma3Attention's causal masked softmax (sliding window
// included; with BF16 probabilities, bf16 precision's); the addon equal to the fallback with 1 and 2 threads, on the
// vector paths (head_dim a multiple of 64) and off them; a query's result the same whatever later tokens the chunk
// holds; on AMX's tile unit near the reference, the same bits with 1 and 2 threads, and within float32 rounding
// however the prompt is chunked; bad arguments refused, out untouched.
import { afterAll, describe, expect, it } from 'vitest';
import {
  attendChunk,
  jsKernels,
  kernelInfo,
  roundBf16,
  roundToBf16,
  nativeKernels,
  setKernelThreads,
  type AttentionPath,
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

function attend(c: Case, shape: DecodeAttentionShape, impl?: KernelImpl, path?: AttentionPath): Float32Array {
  const out = new Float32Array(c.queries.length).fill(NaN);
  attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, shape, path, impl);
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

describe.skipIf(nativeOff || !kernelInfo().amx)('attendChunk on AMX', () => {
  // bf16 precision's shapes: the tile unit takes the probabilities as BF16.
  const shapes = SHAPES.filter(([, shape]) => shape.headDim % 16 === 0).map(
    ([name, shape]) => [name, { ...shape, bf16Probabilities: true }] as [string, DecodeAttentionShape],
  );
  /** A case as bf16 precision holds it: queries, keys and values BF16 values, as the products leave them. */
  const bf16Case = (T: number, S: number, shape: DecodeAttentionShape) => {
    const c = makeCase(T, S, shape, shape.headDim + T);
    for (const array of [c.queries, c.keys, c.values, c.past.key, c.past.value]) roundBf16(array);
    return c;
  };

  it.each(shapes)('%s: near the reference, the same bits with 1 and 2 threads', (_, shape) => {
    const c = bf16Case(37, 21, shape);
    const onAmx = attend(c, shape, undefined, 'amx');
    expect(relativeError(onAmx, Float32Array.from(reference(c, shape)))).toBeLessThan(BF16_HALF_STEP);
    try {
      setKernelThreads(1);
      expect(sameBits(attend(c, shape, undefined, 'amx'), onAmx)).toBe(true);
    } finally {
      setKernelThreads(2);
    }
  });

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
    // With FMAs the same bits; on the tile unit within float32 rounding (its sums over the keys go a tile of 32 at a
    // time, and the tiles start at each source's first key: the cache's slot 0, the chunk's first token).
    const [withFma, onAmx] = (['fma', 'amx'] as const).map((path) => [
      attend(second, shape, undefined, path),
      attend(whole, shape, undefined, path).subarray(split * heads * D),
    ]);
    expect(sameBits(withFma![0]!, withFma![1]!)).toBe(true);
    expect(relativeError(onAmx![0]!, onAmx![1]!)).toBeLessThan(1e-6);
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
      () => attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, shape, 'tile' as 'amx'),
      /path must be 'fma' or 'amx'/,
    ],
    [
      () => attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, shape, 'amx'),
      kernelInfo().amx ? /multiple of 16/ : /AMX not available here/,
    ],
    [
      () =>
        attendChunk(c.queries, c.keys, c.values, out, c.past, c.positions, { ...shape, bf16Probabilities: 1 as never }),
      /bf16Probabilities must be a boolean/,
    ],
  ];
  if (kernelInfo().amx) {
    const wide = { ...shape, headDim: 16 };
    const w = makeCase(4, 5, wide, 2);
    const cannot = () =>
      attendChunk(w.queries, w.keys, w.values, new Float32Array(w.queries.length), w.past, w.positions, wide, 'amx');
    cases.push([cannot, /needs bf16Probabilities/]);
  }
  for (const [call, message] of cases) expect(call).toThrow(message);
  if (!nativeOff) {
    const addon = nativeKernels()!;
    const args = [shape.heads, shape.kvHeads, shape.headDim, shape.scaling, shape.window, false, false] as const;
    const { key, value, slots } = c.past;
    expect(() =>
      addon.attendChunk(c.queries, c.keys, c.values, out, key, value, slots, Int32Array.of(0, 1, 2, -3), ...args),
    ).toThrow(/positions must be ≥ 0/);
    expect(() =>
      addon.attendChunk(c.queries, c.keys, c.values, out, key.subarray(1), value, slots, c.positions, ...args),
    ).toThrow(/pastKey and pastValue/);
    const onAmx = [shape.heads, shape.kvHeads, shape.headDim, shape.scaling, shape.window, true, true] as const;
    expect(() => addon.attendChunk(c.queries, c.keys, c.values, out, key, value, slots, c.positions, ...onAmx)).toThrow(
      kernelInfo().amx ? /multiple of 16/ : /needs AMX/,
    );
  }
  const js = [shape.heads, shape.kvHeads, 32, shape.scaling, shape.window, true, true] as const;
  expect(() =>
    jsKernels.attendChunk(c.queries, c.keys, c.values, out, c.past.key, c.past.value, c.past.slots, c.positions, ...js),
  ).toThrow(/the fallback has no AMX/);
  expect(out.every((v) => v === 7)).toBe(true);
});
