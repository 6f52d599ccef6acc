// BF16 rounding of float64 results: ties to even, subnormals, overflow, the double-rounding trap, and random
// doubles against a search-based reference.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { f32ToBf16Bits } from '../../../engine/index.ts';
import { isNonFiniteBf16, roundToBf16Bits, roundToBf16Value } from '../../../service/weights/rounding.ts';
import { referenceBf16 } from './fixtures.ts';

const ULP_AT_1 = 2 ** -7; // BF16 has 7 explicit mantissa bits

describe('roundToBf16Value', () => {
  it('rounds ties to even', () => {
    expect(roundToBf16Value(1 + ULP_AT_1 / 2)).toBe(1); // halfway between 1 (even) and 1 + ulp (odd)
    expect(roundToBf16Value(1 + 1.5 * ULP_AT_1)).toBe(1 + 2 * ULP_AT_1); // halfway between odd and even: up
    expect(roundToBf16Value(-(1 + ULP_AT_1 / 2))).toBe(-1);
    expect(roundToBf16Value(1 + ULP_AT_1 / 2 + 2 ** -30)).toBe(1 + ULP_AT_1); // just above the tie
  });

  it('decides a float64 value that becomes a float32 tie by its true value (no double rounding)', () => {
    // 1 + 2^-8 + 2^-40 rounds to the float32 tie 1 + 2^-8; its float64 value is above the tie, so BF16 rounds up.
    const x = 1 + 2 ** -8 + 2 ** -40;
    expect(Math.fround(x)).toBe(1 + 2 ** -8);
    expect(roundToBf16Value(x)).toBe(1 + ULP_AT_1);
    expect(f32ToBf16Bits(x)).toBe(0x3f80); // the naive two-step rounding gets this wrong
    expect(roundToBf16Value(1 + 2 ** -8 - 2 ** -40)).toBe(1);
  });

  it('keeps subnormals, flushes what is below half the smallest subnormal to zero', () => {
    const smallest = 2 ** -133; // BF16 subnormal with only the last mantissa bit set
    expect(roundToBf16Value(smallest)).toBe(smallest);
    expect(roundToBf16Value(3 * smallest)).toBe(3 * smallest);
    expect(roundToBf16Value(2.5 * smallest)).toBe(2 * smallest); // tie → even
    expect(roundToBf16Value(0.5 * smallest)).toBe(0); // tie between 0 (even) and the smallest subnormal
    expect(roundToBf16Value(0.5 * smallest + 2 ** -160)).toBe(smallest);
    expect(Object.is(roundToBf16Value(-1e-300), -0)).toBe(true);
  });

  it('overflows to ±Infinity exactly from the midpoint above the largest finite BF16', () => {
    const max = (2 - 2 ** -7) * 2 ** 127;
    const midpoint = (2 - 2 ** -8) * 2 ** 127;
    expect(roundToBf16Value(max)).toBe(max);
    expect(roundToBf16Value(midpoint - 2 ** 100)).toBe(max);
    expect(roundToBf16Value(midpoint)).toBe(Infinity); // tie: max is odd, so up to Inf
    expect(roundToBf16Value(-1e39)).toBe(-Infinity);
    expect(Number.isNaN(roundToBf16Value(NaN))).toBe(true);
  });

  it('matches the reference on random doubles of every magnitude', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true }), (x) => {
        expect(Object.is(roundToBf16Value(x), referenceBf16(x))).toBe(true); // sign of zero included
      }),
      { numRuns: 5_000, seed: 11 },
    );
    fc.assert(
      fc.property(fc.double({ min: -4, max: 4, noNaN: true }), (x) => {
        expect(roundToBf16Value(x)).toBe(referenceBf16(x));
      }),
      { numRuns: 5_000, seed: 12 },
    );
  });

  it('roundToBf16Bits gives the bits of that value; ±Inf and NaN are the non-finite bit patterns', () => {
    expect([1, -2, 0.5, 0, -0, 1 + 2 ** -8 + 2 ** -40].map(roundToBf16Bits)).toEqual([
      0x3f80, 0xc000, 0x3f00, 0, 0x8000, 0x3f81,
    ]);
    expect([Infinity, -1e39, NaN].map(roundToBf16Bits)).toEqual([0x7f80, 0xff80, 0x7fc0]);
    expect([0x7f80, 0xff80, 0x7fc0, 0xffc1].every(isNonFiniteBf16)).toBe(true);
    expect([0x7f7f, 0xff7f, 0, 0x8000, 0x0001].some(isNonFiniteBf16)).toBe(false);
  });
});
