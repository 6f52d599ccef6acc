import { describe, expect, it } from 'vitest';
import { binomialLowerTail, mcnemarExact } from '../../mmlu-pro/stats.ts';

describe("McNemar's exact test", () => {
  it('matches exact values (Python fractions: 2·Σ C(n,i)/2^n)', () => {
    expect(mcnemarExact(0, 5)).toBeCloseTo(0.0625, 12);
    expect(mcnemarExact(1, 9)).toBeCloseTo(0.021484375, 12);
    expect(mcnemarExact(9, 1)).toBeCloseTo(0.021484375, 12);
    expect(mcnemarExact(10, 25)).toBeCloseTo(0.01667384780012071, 12);
    expect(mcnemarExact(120, 160)).toBeCloseTo(0.01960672729028148, 10);
    expect(mcnemarExact(2000, 2150)).toBeCloseTo(0.02071545604926722, 8);
  });

  it('is 1 without discordant pairs or with equal counts, and rejects bad counts', () => {
    expect(mcnemarExact(0, 0)).toBe(1);
    expect(mcnemarExact(3, 3)).toBe(1);
    expect(() => mcnemarExact(-1, 2)).toThrow(/non-negative integers/);
    expect(() => mcnemarExact(1.5, 2)).toThrow(/non-negative integers/);
  });

  it('binomial tail: P(X ≤ n) = 1 and symmetric halves', () => {
    expect(binomialLowerTail(10, 10)).toBeCloseTo(1, 12);
    expect(binomialLowerTail(4, 9)).toBeCloseTo(0.5, 12);
  });
});
