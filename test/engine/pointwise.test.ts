// The pointwise work between a layer's projections on the CPU (engine/kernels.ts): the norms between its sublayers
// (residualNorm), the gated GELU (gatedGelu) and attention's q/k norms with RoPE (normRope), each against a double-precision reference of Hugging Face's Gemma 3
// and against the graph the device path runs; the addon equal to the fallback bit for bit; each row the same alone as
// among others; bad arguments refused before anything is written.
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { parseGemma3Config } from '../../engine/config.ts';
import { buildGatedGeluGraph, buildNormRopeGraph, buildResidualNormGraph } from '../../engine/gemma3-graph.ts';
import { cpuSessionOptions, tensor } from '../../engine/graphs.ts';
import {
  gatedGelu,
  jsKernels,
  nativeKernels,
  normRope,
  residualNorm,
  roundBf16,
  setKernelThreads,
  type KernelImpl,
} from '../../engine/kernels.ts';
import { presetConfig } from '../../engine/tiny-checkpoint.ts';
import { relativeError, sameBits, seededRandom } from '../fixtures.ts';

const EPS = 1e-6;

/** Rows of h and a, and the scales post and next (1 + w), for `rows` rows of H floats. */
function makeCase(rows: number, H: number, seed: number) {
  const random = seededRandom(seed);
  const floats = (n: number, spread: number) => Float32Array.from({ length: n }, () => (random() - 0.5) * spread);
  return { h: floats(rows * H, 8), a: floats(rows * H, 30), post: floats(H, 2), next: floats(H, 2) };
}

/** h + rmsNorm(a)·post and rmsNorm of that sum ·next, in double precision. */
function reference({ h, a, post, next }: ReturnType<typeof makeCase>) {
  const H = post.length;
  const hOut = new Float64Array(h.length);
  const y = new Float64Array(h.length);
  const scale = (x: ArrayLike<number>, o: number) => {
    let sum = 0;
    for (let i = 0; i < H; i++) sum += x[o + i]! ** 2;
    return 1 / Math.sqrt(sum / H + EPS);
  };
  for (let o = 0; o < h.length; o += H) {
    const sa = scale(a, o);
    for (let i = 0; i < H; i++) hOut[o + i] = h[o + i]! + a[o + i]! * sa * post[i]!;
    const sh = scale(hOut, o);
    for (let i = 0; i < H; i++) y[o + i] = hOut[o + i]! * sh * next[i]!;
  }
  return { h: Float32Array.from(hOut), y: Float32Array.from(y) };
}

function run(c: ReturnType<typeof makeCase>, impl?: KernelImpl, roundResidual = false) {
  const h = c.h.slice();
  const y = new Float32Array(h.length);
  residualNorm(h, c.a, c.post, c.next, y, EPS, roundResidual, impl);
  return { h, y };
}

const implementations: [string, KernelImpl | undefined][] = [
  ['fallback', jsKernels],
  ['native', nativeKernels()],
];

for (const [name, impl] of implementations) {
  describe.skipIf(!impl)(`residualNorm (${name})`, () => {
    it('matches a double-precision reference, H with and without a tail past the 8 lanes', () => {
      for (const [rows, H] of [
        [3, 1152],
        [5, 20],
        [2, 3],
      ] as const) {
        const c = makeCase(rows, H, rows * H);
        const out = run(c, impl);
        const want = reference(c);
        expect(relativeError(out.h, want.h)).toBeLessThan(1e-6);
        expect(relativeError(out.y, want.y)).toBeLessThan(1e-6);
      }
    });

    it('gives each row bitwise what it gives alone', () => {
      const H = 40;
      const c = makeCase(6, H, 7);
      const all = run(c, impl);
      for (let r = 0; r < 6; r++) {
        const part = (x: Float32Array) => x.slice(r * H, (r + 1) * H);
        const alone = run({ h: part(c.h), a: part(c.a), post: c.post, next: c.next }, impl);
        expect(sameBits(alone.h, part(all.h))).toBe(true);
        expect(sameBits(alone.y, part(all.y))).toBe(true);
      }
    });
  });
}

describe.skipIf(!nativeKernels())('residualNorm, addon against fallback', () => {
  afterAll(() => setKernelThreads(2));

  it('gives the same bits with 1 and 2 threads, on rows enough to share among threads (a decode step of 40)', () => {
    const c = makeCase(40, 1152, 5);
    for (const roundResidual of [false, true]) {
      const fallback = run(c, jsKernels, roundResidual);
      for (const threads of [1, 2]) {
        setKernelThreads(threads);
        const native = run(c, nativeKernels(), roundResidual);
        expect(sameBits(native.h, fallback.h)).toBe(true);
        expect(sameBits(native.y, fallback.y)).toBe(true);
      }
    }
  });

  it('gives the same bits, on rows of the 1B and 4B widths and with tails, with and without the BF16 residual', () => {
    for (const roundResidual of [false, true])
      for (const [rows, H] of [
        [7, 1152],
        [2, 2560],
        [9, 13],
      ] as const) {
        const c = makeCase(rows, H, H);
        const [native, fallback] = [run(c, nativeKernels(), roundResidual), run(c, jsKernels, roundResidual)];
        expect(sameBits(native.h, fallback.h)).toBe(true);
        expect(sameBits(native.y, fallback.y)).toBe(true);
      }
  });

  it('with roundResidual (bf16 precision): h is the float32 sum rounded to BF16, and y the norm of that h', () => {
    const [rows, H] = [4, 1152];
    const c = makeCase(rows, H, 11);
    const exact = run(c, nativeKernels());
    const rounded = run(c, nativeKernels(), true);
    const want = exact.h.slice();
    roundBf16(want, jsKernels);
    expect(sameBits(rounded.h, want)).toBe(true);
    expect(sameBits(rounded.h, exact.h)).toBe(false);
    // y is the norm of the rounded h: the same as residualNorm with a zero sublayer output over that h.
    const again = run({ h: rounded.h, a: new Float32Array(rows * H), post: c.post, next: c.next }, nativeKernels());
    expect(sameBits(rounded.y, again.y)).toBe(true);
  });

  it('checks its arguments itself, below the TypeScript wrapper, and writes nothing', () => {
    const addon = nativeKernels()!;
    const c = makeCase(2, 8, 3);
    const h = c.h.slice();
    const y = new Float32Array(16).fill(5);
    expect(() => addon.residualNorm(h, c.a.subarray(1), c.post, c.next, y, EPS, false)).toThrow(/rows·H/);
    expect(() => addon.residualNorm(h, c.a, c.post, c.next, h, EPS, false)).toThrow(/share memory/);
    expect(() => addon.residualNorm(h, c.a, c.post, c.next, y, -1, false)).toThrow(/eps/);
    expect(sameBits(h, c.h)).toBe(true);
    expect(y.every((v) => v === 5)).toBe(true);
  });
});

it('agrees with the residual_norm graph the device path runs, within float32 rounding', async () => {
  const config = parseGemma3Config(presetConfig('gemma-3-1b-shape'));
  const H = config.hidden_size;
  const c = makeCase(4, H, 11);
  const session = await ort.InferenceSession.create(buildResidualNormGraph(config), cpuSessionOptions(1));
  const graph = await session.run({
    h: tensor(c.h, [4, H]),
    a: tensor(c.a, [4, H]),
    post: tensor(c.post, [H]),
    next: tensor(c.next, [H]),
  });
  await session.release();
  const out = run(c);
  expect(relativeError(out.h, graph.h_out!.data as Float32Array)).toBeLessThan(1e-6);
  expect(relativeError(out.y, graph.y!.data as Float32Array)).toBeLessThan(1e-6);
});

it('in bf16 precision, the graph rounds its residual as the addon does: its Cast to BF16 is to nearest, ties to even', async () => {
  const config = parseGemma3Config(presetConfig('gemma-3-1b-shape'));
  const H = config.hidden_size;
  const c = makeCase(4, H, 12);
  const feeds = {
    h: tensor(c.h, [4, H]),
    a: tensor(c.a, [4, H]),
    post: tensor(c.post, [H]),
    next: tensor(c.next, [H]),
  };
  const outputs = async (roundResidual: boolean) => {
    const model = buildResidualNormGraph(config, { roundResidual });
    const session = await ort.InferenceSession.create(model, cpuSessionOptions(1));
    const out = await session.run(feeds);
    await session.release();
    return { h: out.h_out!.data as Float32Array, y: out.y!.data as Float32Array };
  };
  const [exact, rounded] = [await outputs(false), await outputs(true)];
  const want = exact.h.slice();
  roundBf16(want, jsKernels);
  expect(sameBits(rounded.h, want)).toBe(true);
  expect(relativeError(rounded.h, run(c, undefined, true).h)).toBeLessThan(1e-6);
  expect(relativeError(rounded.y, run(c, undefined, true).y)).toBeLessThan(1e-6);
});

it('refuses bad arguments with a clear error, h and y untouched', () => {
  const c = makeCase(2, 8, 1);
  const h = c.h.slice();
  const y = new Float32Array(16).fill(5);
  const shared = new Float32Array(32);
  const cases: [() => void, RegExp][] = [
    [() => residualNorm(h, c.a, c.post, c.next.subarray(1), y, EPS), /post and next/],
    [() => residualNorm(h, c.a.subarray(8), c.post, c.next, y, EPS), /h, a and y/],
    [() => residualNorm(h.subarray(3), c.a.subarray(3), c.post, c.next, y.subarray(3), EPS), /h, a and y/],
    [() => residualNorm(h, c.a, c.post, c.next, y, NaN), /eps/],
    [() => residualNorm(h, c.a, c.post, c.next, h, EPS), /share memory/],
    [() => residualNorm(shared.subarray(0, 16), shared.subarray(8, 24), c.post, c.next, y, EPS), /share memory/],
    [() => residualNorm(h, [] as unknown as Float32Array, c.post, c.next, y, EPS), /a must be a Float32Array/],
  ];
  for (const [call, message] of cases) expect(call).toThrow(message);
  expect(sameBits(h, c.h)).toBe(true);
  expect(y.every((v) => v === 5)).toBe(true);
});

// ---------------------------------------------------------------------------------------------------------------
// gatedGelu

/** gate values across GELU's range (its tails clamp e^t), and up values. */
function geluCase(n: number, seed: number) {
  const random = seededRandom(seed);
  const gate = Float32Array.from({ length: n }, (_, i) =>
    i % 97 === 0 ? [0, -0, 1e-30, 100, -100, 40, -40][(i / 97) % 7]! : (random() - 0.5) * 24,
  );
  return { gate, up: Float32Array.from({ length: n }, () => (random() - 0.5) * 6) };
}

/**
 * PyTorch's gelu(approximate='tanh') · up in double precision, as x / (1 + e^t) · up with t = −2u (the same function,
 * without 1 + tanh(u)'s cancellation for negative x), and t.
 */
function geluReference(gate: Float32Array, up: Float32Array): { z: Float64Array; t: Float64Array } {
  const t = Float64Array.from(gate, (x) => -2 * Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3));
  return { z: Float64Array.from(gate, (x, i) => (x / (1 + Math.exp(t[i]!))) * up[i]!), t };
}

function geluRun(c: { gate: Float32Array; up: Float32Array }, impl?: KernelImpl): Float32Array {
  const z = new Float32Array(c.gate.length);
  gatedGelu(c.gate, c.up, z, impl);
  return z;
}

for (const [name, impl] of implementations) {
  describe.skipIf(!impl)(`gatedGelu (${name})`, () => {
    it('matches PyTorch’s tanh GELU in double precision within float32 rounding, tails included', () => {
      const c = geluCase(3000, 5);
      const z = geluRun(c, impl);
      const want = geluReference(c.gate, c.up);
      // A rounding of e^t's argument grows with |t| (at most 88 after the clamp, where the value is below 1e-30).
      z.forEach((v, i) => {
        const bound = (1e-6 + 2e-7 * Math.min(Math.abs(want.t[i]!), 88)) * Math.abs(want.z[i]!) + 1e-35;
        expect(Math.abs(v - want.z[i]!)).toBeLessThanOrEqual(bound);
      });
      expect([...geluRun({ gate: Float32Array.of(0, 40), up: Float32Array.of(3, 0.5) }, impl)]).toEqual([0, 20]);
    });
  });
}

describe.skipIf(!nativeKernels())('gatedGelu, addon against fallback', () => {
  afterAll(() => setKernelThreads(2));

  it('gives the same bits with 1 and 2 threads, across slices and vector tails', () => {
    const c = geluCase(2 * 4096 + 37, 9);
    const fallback = geluRun(c, jsKernels);
    for (const threads of [1, 2]) {
      setKernelThreads(threads);
      expect(sameBits(geluRun(c, nativeKernels()), fallback)).toBe(true);
    }
  });

  it('checks its arguments itself, below the TypeScript wrapper, and writes nothing', () => {
    const addon = nativeKernels()!;
    const c = geluCase(8, 1);
    const z = new Float32Array(8).fill(5);
    expect(() => addon.gatedGelu(c.gate, c.up.subarray(1), z)).toThrow(/same number/);
    expect(() => addon.gatedGelu(c.gate, c.up, c.gate)).toThrow(/share memory/);
    expect(z.every((v) => v === 5)).toBe(true);
  });
});

it('gatedGelu agrees with the gated_gelu graph the device path runs, within float32 rounding', async () => {
  const config = parseGemma3Config(presetConfig('gemma-3-1b-shape'));
  const I = config.intermediate_size;
  const c = geluCase(2 * I, 13);
  const session = await ort.InferenceSession.create(buildGatedGeluGraph(config), cpuSessionOptions(1));
  const graph = await session.run({ gate: tensor(c.gate, [2, I]), up: tensor(c.up, [2, I]) });
  await session.release();
  expect(relativeError(geluRun(c), graph.z!.data as Float32Array)).toBeLessThan(1e-6);
});

it('gatedGelu refuses bad arguments with a clear error, z untouched', () => {
  const c = geluCase(8, 2);
  const z = new Float32Array(8).fill(5);
  const cases: [() => void, RegExp][] = [
    [() => gatedGelu(c.gate, c.up.subarray(2), z), /same number/],
    [() => gatedGelu(new Float32Array(0), new Float32Array(0), new Float32Array(0)), /at least 1/],
    [() => gatedGelu(c.gate, c.up, c.up), /share memory/],
    [() => gatedGelu(c.gate, [] as unknown as Float32Array, z), /up must be a Float32Array/],
  ];
  for (const [call, message] of cases) expect(call).toThrow(message);
  expect(z.every((v) => v === 5)).toBe(true);
});

/** q or k of `rows` rows of `heads` heads of D floats, a head's norm scale, and the rows' RoPE tables at positions. */
function ropeCase(rows: number, heads: number, D: number, seed: number) {
  const random = seededRandom(seed);
  const floats = (n: number, spread: number) => Float32Array.from({ length: n }, () => (random() - 0.5) * spread);
  const angles = Float64Array.from(
    { length: (rows * D) / 2 },
    (_, j) => (1 + Math.floor(j / (D / 2)) * 37) * 1e-3 ** ((j % (D / 2)) / (D / 2)),
  );
  return {
    x: floats(rows * heads * D, 20),
    scale: floats(D, 2),
    cos: Float32Array.from(angles, Math.cos),
    sin: Float32Array.from(angles, Math.sin),
  };
}

function ropeRun(c: ReturnType<typeof ropeCase>, heads: number, impl?: KernelImpl): Float32Array {
  const x = c.x.slice();
  normRope(x, c.scale, c.cos, c.sin, heads, EPS, impl);
  return x;
}

describe('normRope (q_norm / k_norm and RoPE)', () => {
  it.skipIf(!nativeKernels())('gives the addon’s bits in the fallback, on the 1B and 4B heads and a tiny one', () => {
    for (const [rows, heads, D] of [
      [7, 4, 256],
      [3, 8, 256],
      [5, 2, 6],
    ] as const) {
      const c = ropeCase(rows, heads, D, rows * heads);
      expect(sameBits(ropeRun(c, heads, nativeKernels()), ropeRun(c, heads, jsKernels))).toBe(true);
    }
  });

  it('agrees with the norm_rope graph the device path runs, within float32 rounding (bf16: rounded), and rotates: |y| is kept', async () => {
    const config = parseGemma3Config(presetConfig('gemma-3-1b-shape'));
    const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D } = config;
    const R = 5;
    const q = ropeCase(R, nH, D, 21);
    const k = { ...ropeCase(R, nKV, D, 22), cos: q.cos, sin: q.sin, scale: ropeCase(1, 1, D, 23).scale };
    const run = async (bf16: boolean) => {
      const graph = buildNormRopeGraph(config, { bf16 });
      const session = await ort.InferenceSession.create(graph, cpuSessionOptions(1));
      const out = await session.run({
        q: tensor(q.x, [R, 1, nH * D]),
        k: tensor(k.x, [R, 1, nKV * D]),
        q_norm: tensor(q.scale, [D]),
        k_norm: tensor(k.scale, [D]),
        cos: tensor(q.cos, [R, 1, D / 2]),
        sin: tensor(q.sin, [R, 1, D / 2]),
      });
      await session.release();
      return out;
    };
    const graph = await run(false);
    // bf16 precision's graph: the same queries and keys, rounded to BF16.
    const rounded = await run(true);
    for (const name of ['queries', 'keys']) {
      const want = (graph[name]!.data as Float32Array).slice();
      roundBf16(want, jsKernels);
      expect(sameBits(rounded[name]!.data as Float32Array, want)).toBe(true);
    }
    const [queries, keys] = [ropeRun(q, nH), ropeRun(k, nKV)];
    expect(relativeError(queries, graph.queries!.data as Float32Array)).toBeLessThan(1e-6);
    expect(relativeError(keys, graph.keys!.data as Float32Array)).toBeLessThan(1e-6);
    // A rotation keeps each pair's length: that of the normed head's (i, i + D/2) pair.
    const normed = q.x.slice(0, D);
    const norm = 1 / Math.sqrt(normed.reduce((sum, v) => sum + v * v, 0) / D + EPS);
    for (const i of [0, 17, D / 2 - 1]) {
      const before = Math.hypot(normed[i]! * norm * q.scale[i]!, normed[i + D / 2]! * norm * q.scale[i + D / 2]!);
      expect(Math.hypot(queries[i]!, queries[i + D / 2]!)).toBeCloseTo(before, 4);
    }
  });

  it('refuses bad arguments with a clear error, x untouched (wrapper and addon)', () => {
    const c = ropeCase(2, 2, 8, 3);
    const x = c.x.slice();
    const cases: [() => void, RegExp][] = [
      [() => normRope(x, c.scale.subarray(1), c.cos, c.sin, 2, EPS), /even D/],
      [() => normRope(x, c.scale, c.cos, c.sin.subarray(1), 2, EPS), /cos and sin/],
      [() => normRope(x.subarray(1), c.scale, c.cos, c.sin, 2, EPS), /rows·heads·D/],
      [() => normRope(x, c.scale, c.cos, c.sin, 0, EPS), /heads/],
      [() => normRope(x, c.scale, c.cos, c.sin, 2, -1), /eps/],
      [() => normRope(x, x.subarray(0, 8), c.cos, c.sin, 2, EPS), /share memory/],
    ];
    for (const [call, message] of cases) expect(call).toThrow(message);
    const addon = nativeKernels();
    if (addon) {
      expect(() => addon.normRope(x.subarray(1), c.scale, c.cos, c.sin, 2, EPS)).toThrow(/rows·heads·D/);
      expect(() => addon.normRope(x, x.subarray(0, 8), c.cos, c.sin, 2, EPS)).toThrow(/share memory/);
    }
    expect(sameBits(x, c.x)).toBe(true);
  });
});
