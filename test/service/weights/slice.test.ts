// Slices against NumPy (golden values printed by numpy 2.4 for np.arange(n)[spec]) and against Python's
// slice.indices() on random specs; out-of-range bounds and empty selections are refused, not clamped.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIwiError } from '../../../service/errors.ts';
import { formatSlice, gather, resolveSlice, type SliceDim } from '../../../service/weights/slice.ts';
import { referenceIndices, referenceOffsets } from './fixtures.ts';

const arange = (n: number) => Float32Array.from({ length: n }, (_, i) => i);

// [n, spec, np.arange(n)[spec]]
const NUMPY: [number, SliceDim, number[]][] = [
  [10, [null, null, -1], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]],
  [10, [null, null, -3], [9, 6, 3, 0]],
  [10, [-3, null], [7, 8, 9]],
  [10, [8, 2, -2], [8, 6, 4]],
  [10, [2, 8, 3], [2, 5]],
  [10, [10, null, -1], [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]],
  [10, [0, 10], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]],
  [10, [-10, -4], [0, 1, 2, 3, 4, 5]],
  [7, [5, null, -2], [5, 3, 1]],
  [7, [null, -7, -1], [6, 5, 4, 3, 2, 1]],
  [7, [1, null, 100], [1]],
  [1, [null, null, -1], [0]],
  [10, -1, [9]],
  [10, -10, [0]],
  [10, 0, [0]],
  [5, [null, 3], [0, 1, 2]],
  [5, [3, null, -1], [3, 2, 1, 0]],
  [5, [-2, -5, -1], [3, 2, 1]],
];

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    return isIwiError(error) ? error.code : `not an IwiError: ${String(error)}`;
  }
  return undefined;
}

describe('resolveSlice', () => {
  it.each(NUMPY)('n=%i %j selects what NumPy selects', (n, spec, expected) => {
    const selection = resolveSlice([spec], [n], 't');
    expect(Array.from(gather(arange(n), [n], selection))).toEqual(expected);
    expect(selection.shape).toEqual(typeof spec === 'number' ? [] : [expected.length]);
  });

  it('matches NumPy on a 2-d array with strided, negative and integer entries', () => {
    const a = arange(24); // np.arange(24).reshape(4, 6)
    const pick = (spec: SliceDim[]) => {
      const s = resolveSlice(spec, [4, 6], 't');
      return { shape: s.shape, values: Array.from(gather(a, [4, 6], s)) };
    };
    expect(
      pick([
        [null, null, -2],
        [1, 5, 2],
      ]),
    ).toEqual({ shape: [2, 2], values: [19, 21, 7, 9] });
    expect(pick([-1, [null, null, -3]])).toEqual({ shape: [2], values: [23, 20] });
    expect(pick([[1, 3]])).toEqual({ shape: [2, 6], values: [6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17] });
    expect(pick([2, -1])).toEqual({ shape: [], values: [17] });
    expect(pick([])).toEqual({ shape: [4, 6], values: Array.from(a) });
  });

  it('agrees with Python slice.indices() on random 3-d specs', () => {
    const dim = (n: number) =>
      fc.oneof(
        fc.constant(null),
        fc.integer({ min: -n, max: n - 1 }),
        fc.tuple(
          fc.option(fc.integer({ min: -n, max: n })),
          fc.option(fc.integer({ min: -n, max: n })),
          fc.option(fc.integer({ min: -4, max: 4 }).filter((s) => s !== 0)),
        ),
      );
    const shape = [3, 5, 4];
    fc.assert(
      fc.property(fc.tuple(dim(3), dim(5), dim(4)), (spec) => {
        const lists = spec.map((e, d) => referenceIndices(e as SliceDim, shape[d]!));
        const expected = referenceOffsets(lists, shape);
        if (expected.length === 0) {
          expect(codeOf(() => resolveSlice(spec, shape, 't'))).toBe('SLICE_INVALID');
          return;
        }
        const selection = resolveSlice(spec, shape, 't');
        expect(Array.from(gather(arange(60), shape, selection))).toEqual(expected);
        expect(selection.shape).toEqual(lists.filter((_, d) => typeof spec[d] !== 'number').map((l) => l.length));
      }),
      { numRuns: 500, seed: 7 },
    );
  });

  it('refuses bounds beyond ±n where NumPy would clamp, and indices outside the dim', () => {
    // NumPy: np.arange(10)[-1:-11:-1] is all ten and np.arange(7)[6:-8:-4] is [6, 2]; here they are errors.
    expect(codeOf(() => resolveSlice([[-1, -11, -1]], [10], 't'))).toBe('SLICE_OUT_OF_RANGE');
    expect(codeOf(() => resolveSlice([[6, -8, -4]], [7], 't'))).toBe('SLICE_OUT_OF_RANGE');
    expect(codeOf(() => resolveSlice([[0, 11]], [10], 't'))).toBe('SLICE_OUT_OF_RANGE');
    expect(codeOf(() => resolveSlice([10], [10], 't'))).toBe('SLICE_OUT_OF_RANGE');
    expect(codeOf(() => resolveSlice([-11], [10], 't'))).toBe('SLICE_OUT_OF_RANGE');
  });

  it('refuses malformed specs with a message naming the tensor and dimension', () => {
    const cases: [unknown, string][] = [
      [[[0, 4, 0]], 'step must not be zero'],
      [[[0.5, 4]], 'is not an integer'],
      [[1.5], 'is not an integer'],
      [[[1]], 'must be null, an integer index, or [start, stop]'],
      [[[0, 1, 1, 1]], 'must be null'],
      [['0:4'], 'must be null'],
      [[null, null, null], 'has 3 entries but the tensor has 2 dimensions'],
      ['0:4', 'must be a list'],
      [[[3, 1]], 'selects no elements'],
    ];
    for (const [spec, message] of cases) {
      let error: unknown;
      try {
        resolveSlice(spec, [4, 6], 'model.norm.weight');
      } catch (e) {
        error = e;
      }
      expect(isIwiError(error, 'SLICE_INVALID'), JSON.stringify(spec)).toBe(true);
      expect((error as Error).message).toContain(message);
      expect((error as Error).message).toContain('model.norm.weight');
    }
  });

  it('formats slices like NumPy', () => {
    expect(formatSlice([[0, 4], null, [null, null, -1], 3, [-2, null]])).toBe('[0:4, :, ::-1, 3, -2:]');
    expect(formatSlice([])).toBe('[:]');
  });
});
