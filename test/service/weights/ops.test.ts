// Each write op against a plain reference (NumPy indexing from Python's slice rules, BF16 rounding by search), on
// random strided and negative slices of tiny-4b tensors; BF16 edge cases through the ops; and every kind of invalid
// write refused with its code, leaving the weights, the op log and the overlay exactly as they were.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isIwiError } from '../../../service/errors.ts';
import { bf16ToF32, bf16Value } from '../../../engine/index.ts';
import { bf16Sha256 } from '../../../service/weights/patch.ts';
import type { SliceDim } from '../../../service/weights/slice.ts';
import { WeightStore, type EpisodeWeights } from '../../../service/weights/store.ts';
import { referenceBf16, referenceIndices, referenceOffsets, tinyFixture, type TinyFixture } from './fixtures.ts';

const K = 'language_model.model.layers.1.self_attn.k_proj.weight'; // [32, 64]
const K2 = 'language_model.model.layers.2.self_attn.k_proj.weight'; // [32, 64]
const DOWN = 'language_model.model.layers.0.mlp.down_proj.weight'; // [64, 192]
const QNORM = 'language_model.model.layers.0.self_attn.q_norm.weight'; // [16]
const EMBED = 'language_model.model.embed_tokens.weight';
const HEAD = 'language_model.lm_head.weight';
const VISION = 'vision_tower.vision_model.post_layernorm.weight';

let fixture: TinyFixture;
let store: WeightStore;
let episodes = 0;

beforeAll(() => {
  fixture = tinyFixture('tiny-4b');
  store = new WeightStore(fixture.checkpoint);
});
afterAll(() => fixture.cleanup());

/** Float32 values of BF16 bits (exact), to compare with the reference's values. */
const pristineValues = (name: string) => bf16ToF32(store.pristineBits(name));
const currentValues = (episode: EpisodeWeights, name: string) => bf16ToF32(episode.bits(name));

function freshEpisode(): EpisodeWeights {
  return store.createEpisode(`e${episodes++}`);
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return isIwiError(error) ? error.code : `not an IwiError: ${(error as Error).stack}`;
  }
  return undefined;
}

/** Deterministic values with ties, subnormals and ordinary numbers mixed in. */
function values(n: number, seed: number): number[] {
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
  const special = [1 + 2 ** -8, -(1 + 3 * 2 ** -8), 2.5 * 2 ** -133, 0, -0, 3.3895313892515355e38];
  return Array.from({ length: n }, () =>
    next() < 0.2 ? special[Math.floor(next() * special.length)]! : (next() - 0.5) * 4,
  );
}

/** Expected tensor after `slice ← f(old, k)` with reference indexing and rounding. */
function expectedAfter(
  name: string,
  spec: SliceDim[],
  f: (old: number, k: number) => number,
): { expected: Float32Array; offsets: number[] } {
  const shape = store.manifest.resolve(name).shape;
  const before = pristineValues(name);
  const offsets = referenceOffsets(
    shape.map((n, d) => referenceIndices((spec[d] ?? null) as SliceDim, n)),
    shape,
  );
  const expected = before.slice();
  offsets.forEach((o, k) => (expected[o] = referenceBf16(f(before[o]!, k))));
  return { expected, offsets };
}

function expectBitsEqual(actual: Float32Array, expected: Float32Array): void {
  expect(Array.from(new Uint32Array(actual.buffer, actual.byteOffset, actual.length))).toEqual(
    Array.from(new Uint32Array(expected.buffer, expected.byteOffset, expected.length)),
  );
}

function checkResult(result: { changed: number; deltaFrobenius: number }, name: string, expected: Float32Array): void {
  const before = pristineValues(name);
  const b = new Uint32Array(before.buffer, before.byteOffset, before.length);
  const e = new Uint32Array(expected.buffer);
  let changed = 0,
    sq = 0;
  for (let i = 0; i < b.length; i++) {
    if (b[i] !== e[i]) {
      changed++;
      sq += (expected[i]! - before[i]!) ** 2;
    }
  }
  expect(result.changed).toBe(changed);
  expect(result.deltaFrobenius).toBeCloseTo(Math.sqrt(sq), 9);
}

const dimArb = (n: number) =>
  fc.oneof(
    fc.constant(null),
    fc.integer({ min: -n, max: n - 1 }),
    fc.tuple(
      fc.option(fc.integer({ min: -n, max: n }), { nil: null }),
      fc.option(fc.integer({ min: -n, max: n }), { nil: null }),
      fc.constantFrom(1, 2, 3, -1, -2, -5),
    ),
  );
const rangeArb = (n: number) =>
  fc.tuple(
    fc.option(fc.integer({ min: -n, max: n }), { nil: null }),
    fc.option(fc.integer({ min: -n, max: n }), { nil: null }),
    fc.constantFrom(1, 2, -1, -3),
  );
const nonEmpty = (spec: SliceDim[], shape: number[]) =>
  shape.every((n, d) => referenceIndices((spec[d] ?? null) as SliceDim, n).length > 0);
const sliceArb = fc.tuple(dimArb(32), dimArb(64)).filter((s) => nonEmpty(s, [32, 64])) as fc.Arbitrary<SliceDim[]>;

describe('write ops against the reference', () => {
  it('replace writes the rounded values into random N-d slices', () => {
    fc.assert(
      fc.property(sliceArb, fc.nat(), (spec, seed) => {
        const episode = freshEpisode();
        const shape = [32, 64];
        const lists = shape.map((n, d) => referenceIndices(spec[d] ?? null, n));
        const selShape = lists.filter((_, d) => typeof spec[d] !== 'number').map((l) => l.length);
        const flat = values(
          lists.reduce((a, l) => a * l.length, 1),
          seed,
        ).map((v) => (v > 3e38 ? 1 : v)); // no overflow here
        const nested =
          selShape.length === 0
            ? flat[0]!
            : selShape.length === 1
              ? flat
              : Array.from({ length: selShape[0]! }, (_, i) => flat.slice(i * selShape[1]!, (i + 1) * selShape[1]!));
        const result = episode.write({ op: 'replace', tensor: K, slice: spec, values: nested });
        const { expected } = expectedAfter(K, spec, (_, k) => Math.fround(flat[k]!));
        expectBitsEqual(currentValues(episode, K), expected);
        checkResult(result, K, expected);
        store.dropEpisode(episode.id);
      }),
      { numRuns: 150, seed: 1 },
    );
  });

  it('fill and scale', () => {
    fc.assert(
      fc.property(
        sliceArb,
        fc.constantFrom(0, 1 + 2 ** -8, -2.75, 1e-40, 0.1),
        fc.constantFrom(-1, 0.5, 3.7, 1 + 2 ** -9, 0),
        (spec, value, factor) => {
          const episode = freshEpisode();
          const filled = episode.write({ op: 'fill', tensor: K, slice: spec, value });
          const afterFill = expectedAfter(K, spec, () => value).expected;
          expectBitsEqual(currentValues(episode, K), afterFill);
          checkResult(filled, K, afterFill);
          const other = store.createEpisode(`${episode.id}-scale`);
          const scaled = other.write({ op: 'scale', tensor: K, slice: spec, factor });
          const afterScale = expectedAfter(K, spec, (old) => old * factor).expected;
          expectBitsEqual(currentValues(other, K), afterScale);
          checkResult(scaled, K, afterScale);
          store.dropEpisode(episode.id);
          store.dropEpisode(other.id);
        },
      ),
      { numRuns: 80, seed: 2 },
    );
  });

  it('copy from another tensor and within one tensor with overlap (NumPy reads before it writes)', () => {
    fc.assert(
      fc.property(sliceArb, (spec) => {
        const episode = freshEpisode();
        episode.write({ op: 'copy', tensor: K, slice: spec, source: { tensor: K2, slice: spec } });
        const source = pristineValues(K2);
        const { expected, offsets } = expectedAfter(K, spec, () => 0);
        offsets.forEach((o) => (expected[o] = source[o]!));
        expectBitsEqual(currentValues(episode, K), expected);
        store.dropEpisode(episode.id);
      }),
      { numRuns: 60, seed: 3 },
    );
    const episode = freshEpisode();
    episode.write({ op: 'copy', tensor: K, slice: [[1, null]], source: { tensor: K, slice: [[0, -1]] } }); // rows shift down by one
    const before = pristineValues(K);
    const expected = before.slice();
    expected.set(before.subarray(0, 31 * 64), 64);
    expectBitsEqual(currentValues(episode, K), expected);
    // Copy reads the episode's current values, not pristine ones.
    episode.write({ op: 'copy', tensor: K2, slice: [0], source: { tensor: K, slice: [1] } });
    expectBitsEqual(currentValues(episode, K2).subarray(0, 64), before.subarray(0, 64));
  });

  it('low_rank_add adds α·U·Vᵀ on random 2-d strided slices', () => {
    fc.assert(
      fc.property(
        fc.tuple(rangeArb(64), rangeArb(192)).filter((s) => nonEmpty(s, [64, 192])),
        fc.integer({ min: 1, max: 5 }),
        fc.nat(),
        fc.constantFrom(1, -0.5, 0.01),
        (spec, r, seed, alpha) => {
          const episode = freshEpisode();
          const [rows, cols] = [64, 192].map((n, d) => referenceIndices(spec[d]!, n).length) as [number, number];
          const u = values(rows * r, seed).map((x) => Math.fround(x > 3e38 ? 1 : x));
          const v = values(cols * r, seed + 1).map((x) => Math.fround(x > 3e38 ? 1 : x));
          const U = Array.from({ length: rows }, (_, i) => u.slice(i * r, (i + 1) * r));
          const V = Array.from({ length: cols }, (_, j) => v.slice(j * r, (j + 1) * r));
          const result = episode.write({ op: 'low_rank_add', tensor: DOWN, slice: spec, alpha, u: U, v: V });
          const { expected } = expectedAfter(DOWN, spec, (old, k) => {
            const [i, j] = [Math.floor(k / cols), k % cols];
            let delta = 0;
            for (let q = 0; q < r; q++) delta += alpha * U[i]![q]! * V[j]![q]!;
            return old + delta;
          });
          expectBitsEqual(currentValues(episode, DOWN), expected);
          checkResult(result, DOWN, expected);
          store.dropEpisode(episode.id);
        },
      ),
      { numRuns: 60, seed: 4 },
    );
  });

  it('writes through the tied LM head alias land in embed_tokens, recorded under the canonical name', () => {
    const episode = freshEpisode();
    const result = episode.write({ op: 'fill', tensor: HEAD, slice: [7, [0, 4]], value: 0.25 });
    expect(result.tensor).toBe(EMBED);
    expect(Array.from(currentValues(episode, EMBED).subarray(7 * 64, 7 * 64 + 4))).toEqual([0.25, 0.25, 0.25, 0.25]);
    expect(bf16Value(episode.source.bf16(EMBED)[7 * 64]!)).toBe(0.25);
    expect(episode.ops[0]).toMatchObject({ op: 'fill', tensor: EMBED });
    expect(episode.touchedTensors()).toEqual([EMBED]);
  });

  it('rounds to BF16 with ties to even and keeps subnormals', () => {
    const episode = freshEpisode();
    episode.write({
      op: 'replace',
      tensor: QNORM,
      slice: [[0, 6]],
      values: [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 2.5 * 2 ** -133, 2 ** -134, 1 + 2 ** -8 + 2 ** -20],
    });
    expect(Array.from(currentValues(episode, QNORM).subarray(0, 6))).toEqual([
      1,
      1 + 2 ** -6,
      -1,
      2 * 2 ** -133,
      0,
      1 + 2 ** -7,
    ]);
    episode.write({ op: 'fill', tensor: QNORM, slice: [[6, 8]], value: 1.5 });
    const r = episode.write({ op: 'scale', tensor: QNORM, slice: [[6, 8]], factor: 1 + 2 ** -9 });
    expect(r.changed).toBe(0); // 1.5·(1 + 2^-9) = 1.5 + 1.5·2^-9 is below half an ulp (2^-8) of 1.5
  });
});

describe('invalid writes', () => {
  it('refuses each kind with its code and changes nothing', () => {
    const episode = freshEpisode();
    const foreign = store.createEpisode(`${episode.id}-other`);
    const foreignHandle = foreign.read({ op: 'slice', tensor: K, slice: [[0, 2]], as_handle: true }) as {
      handle: { id: string };
    };
    const nanHandle = episode.createHandle(new Float32Array([1, NaN]), [2], 'test');
    const row = (n: number) => Array.from({ length: n }, () => 0.5);
    const cases: [string, unknown][] = [
      ['OP_INVALID', { op: 'add', tensor: K }],
      ['OP_INVALID', { op: 'fill', tensor: K, value: 1, valeu: 2 }],
      ['OP_INVALID', { op: 'fill', tensor: K, value: '1' }],
      ['OP_INVALID', 'fill'],
      ['WEIGHT_NOT_FOUND', { op: 'fill', tensor: 'model.layers.0.mlp.down_proj.weight', value: 1 }],
      ['WEIGHT_NOT_WRITABLE', { op: 'fill', tensor: VISION, value: 1 }],
      ['SLICE_OUT_OF_RANGE', { op: 'fill', tensor: K, slice: [32], value: 1 }],
      ['SLICE_OUT_OF_RANGE', { op: 'fill', tensor: K, slice: [null, [0, 65]], value: 1 }],
      ['SLICE_INVALID', { op: 'fill', tensor: K, slice: [[0, 4, 0]], value: 1 }],
      ['SLICE_INVALID', { op: 'fill', tensor: K, slice: [[4, 0]], value: 1 }],
      ['SLICE_INVALID', { op: 'fill', tensor: K, slice: '0:4', value: 1 }],
      ['SHAPE_MISMATCH', { op: 'replace', tensor: K, slice: [0], values: row(63) }],
      ['SHAPE_MISMATCH', { op: 'replace', tensor: K, slice: [[0, 1]], values: row(64) }], // [1, 64] ≠ [64]: no broadcasting
      [
        'SHAPE_MISMATCH',
        {
          op: 'replace',
          tensor: K,
          slice: [
            [0, 2],
            [0, 2],
          ],
          values: [[1, 2], [3]],
        },
      ],
      ['OP_INVALID', { op: 'replace', tensor: K, slice: [0, [0, 2]], values: [1, 'x'] }],
      [
        'OP_INVALID',
        { op: 'replace', tensor: EMBED, slice: [[0, 1025]], values: Array.from({ length: 1025 }, () => row(64)) },
      ], // 65,600 inline values
      ['NON_FINITE_VALUE', { op: 'replace', tensor: K, slice: [0, [0, 2]], values: [1, NaN] }],
      ['NON_FINITE_VALUE', { op: 'replace', tensor: K, slice: [0, [0, 2]], values: [1, 1e39] }], // overflows float32
      ['NON_FINITE_VALUE', { op: 'replace', tensor: K, slice: [0, [0, 2]], values: [1, 3.4e38] }], // finite float32, Inf in BF16
      ['NON_FINITE_VALUE', { op: 'fill', tensor: K, value: Infinity }],
      ['NON_FINITE_VALUE', { op: 'fill', tensor: K, value: 3.3961775292304787e38 }],
      ['NON_FINITE_VALUE', { op: 'scale', tensor: K, factor: 1e300 }],
      ['NON_FINITE_VALUE', { op: 'scale', tensor: K, factor: NaN }],
      [
        'NON_FINITE_VALUE',
        {
          op: 'low_rank_add',
          tensor: K,
          slice: [
            [0, 2],
            [0, 2],
          ],
          alpha: 1e38,
          u: [[1e10], [1]],
          v: [[1], [1]],
        },
      ],
      [
        'OP_INVALID',
        {
          op: 'low_rank_add',
          tensor: K,
          slice: [
            [0, 2],
            [0, 2],
          ],
          alpha: 1,
          u: [row(65), row(65)],
          v: [row(65), row(65)],
        },
      ],
      [
        'SHAPE_MISMATCH',
        {
          op: 'low_rank_add',
          tensor: K,
          slice: [
            [0, 2],
            [0, 2],
          ],
          alpha: 1,
          u: [[1], [1], [1]],
          v: [[1], [1]],
        },
      ],
      [
        'SHAPE_MISMATCH',
        {
          op: 'low_rank_add',
          tensor: K,
          slice: [
            [0, 2],
            [0, 2],
          ],
          alpha: 1,
          u: [
            [1, 2],
            [1, 2],
          ],
          v: [[1], [1]],
        },
      ],
      ['SHAPE_MISMATCH', { op: 'low_rank_add', tensor: QNORM, alpha: 1, u: [[1]], v: [[1]] }],
      ['SHAPE_MISMATCH', { op: 'low_rank_add', tensor: K, slice: [0], alpha: 1, u: [[1]], v: [[1]] }],
      ['SHAPE_MISMATCH', { op: 'copy', tensor: K, slice: [[0, 2]], source: { tensor: K2, slice: [[0, 3]] } }],
      ['WEIGHT_NOT_FOUND', { op: 'copy', tensor: K, source: { tensor: 'nope' } }],
      ['OP_INVALID', { op: 'copy', tensor: K, source: { tensor: K2, slices: [] } }],
      ['HANDLE_NOT_FOUND', { op: 'replace', tensor: K, slice: [[0, 2]], values: { handle: 'h999999' } }],
      ['HANDLE_FOREIGN', { op: 'replace', tensor: K, slice: [[0, 2]], values: { handle: foreignHandle.handle.id } }],
      ['NON_FINITE_VALUE', { op: 'replace', tensor: K, slice: [0, [0, 2]], values: { handle: nanHandle.id } }],
      ['OP_INVALID', { op: 'replace', tensor: K, slice: [[0, 2]], values: { handle: 'h1', extra: 1 } }],
    ];
    const valid = fc.constantFrom<unknown>(
      { op: 'fill', tensor: K, slice: [[0, 4]], value: 0.5 },
      { op: 'scale', tensor: K2, slice: [null, [null, null, -3]], factor: -2 },
      {
        op: 'low_rank_add',
        tensor: DOWN,
        slice: [
          [0, 2],
          [5, 8],
        ],
        alpha: 1,
        u: [[1], [2]],
        v: [[1], [0.5], [0.25]],
      },
      { op: 'fill', tensor: QNORM, slice: [[null, null, -4]], value: -1 },
    );
    const snapshot = () => ({
      digests: [K, K2, DOWN, QNORM].map((n) => bf16Sha256(episode.bits(n))),
      embedRows: bf16Sha256(episode.bits(EMBED).subarray(0, 16 * 64)), // the rows any case here could touch
      ops: episode.opCount,
      bytes: episode.overlayBytes(),
    });
    // Every case, after a random history of valid writes (indices keep fast-check's report short).
    fc.assert(
      fc.property(fc.array(valid, { maxLength: 3 }), fc.constantFrom(...cases.keys()), (history, i) => {
        const [code, bad] = cases[i]!;
        episode.revert(0);
        for (const op of history) episode.write(op);
        const before = snapshot();
        expect(
          codeOf(() => episode.write(bad)),
          `case ${i}`,
        ).toBe(code);
        expect(snapshot()).toEqual(before);
      }),
      { numRuns: 120, seed: 5 },
    );
    for (const [i, [code, bad]] of cases.entries())
      expect(
        codeOf(() => episode.write(bad)),
        `case ${i}`,
      ).toBe(code);
  });

  it('names the tensor and the problem in the message', () => {
    const episode = freshEpisode();
    const message = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    };
    expect(
      message(() =>
        episode.write({
          op: 'fill',
          tensor: K,
          slice: [
            [0, 2],
            [0, 2],
          ],
          value: 3.4e38,
        }),
      ),
    ).toBe(
      `fill on "${K}" [0:2, 0:2]: the result at selection index [0,0] is Infinity, which BF16 cannot hold (largest finite BF16 is ±3.3895e38)`,
    );
    expect(message(() => episode.write({ op: 'replace', tensor: K, slice: [0], values: [1, 2] }))).toBe(
      `replace on "${K}" [0]: values have shape [2], the selection has shape [64] (no broadcasting)`,
    );
    expect(message(() => episode.write({ op: 'fill', tensor: VISION, value: 1 }))).toContain(
      `tensor "${VISION}" is not writable`,
    );
  });
});
