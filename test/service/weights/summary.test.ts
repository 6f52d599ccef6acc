// summarize() against NumPy (golden values from numpy 2.4: mean, std, quantile(method="linear"), linalg.norm).
import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../../../engine/index.ts';
import { summarize } from '../../../service/weights/summary.ts';

const MATRIX = new Float32Array([1, -2, 0, 3, 0.5, -1.5, 0, 0, 4, 2, 2, -2]); // [4, 3]
const keys = ['p0', 'p5', 'p25', 'p50', 'p75', 'p95', 'p100'];

describe('summarize', () => {
  it('matches NumPy on a 4×3 matrix', () => {
    const s = summarize(MATRIX, [4, 3]);
    expect(s).toMatchObject({ shape: [4, 3], count: 12, min: -2, max: 4, abs_mean: 1.5, zero_fraction: 0.25 });
    expect(s.mean).toBeCloseTo(0.5833333333333334, 14);
    expect(s.std).toBeCloseTo(1.8352262954621035, 14);
    expect(s.l2_norm).toBeCloseTo(6.670832032063167, 14);
    const rows = [
      2.23606797749979, 2.4093325296092165, 3.102390738046923, 3.427633303350194, 3.598076211353316, 3.919615242270663,
      4.0,
    ];
    const cols = [
      2.8722813232690143, 2.959218929619507, 3.3069693550214776, 3.7416573867739413, 4.229323976401122,
      4.619457248102865, 4.716990566028302,
    ];
    keys.forEach((k, i) => {
      expect(s.row_norm_quantiles![k]).toBeCloseTo(rows[i]!, 13);
      expect(s.col_norm_quantiles![k]).toBeCloseTo(cols[i]!, 13);
    });
  });

  it('treats N-d selections as [leading dims, last dim] and 1-d ones without norm quantiles', () => {
    const threeD = summarize(MATRIX, [2, 2, 3]);
    expect(threeD.row_norm_quantiles).toEqual(summarize(MATRIX, [4, 3]).row_norm_quantiles);
    const flat = summarize(MATRIX, [12]);
    expect(flat.row_norm_quantiles).toBeNull();
    expect(flat.col_norm_quantiles).toBeNull();
    expect(flat.mean).toBe(summarize(MATRIX, [4, 3]).mean);
    const scalar = summarize(new Float32Array([-3]), []);
    expect(scalar).toMatchObject({
      count: 1,
      mean: -3,
      std: 0,
      min: -3,
      max: -3,
      abs_mean: 3,
      l2_norm: 3,
      zero_fraction: 0,
    });
  });

  it('streams BF16 bits in chunks of rows to exactly the figures of their float32 values', () => {
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    // 210,000 elements: several chunks, rows of 300 that do not divide a chunk's 65,536 elements evenly.
    const bits = f32ToBf16(Float32Array.from({ length: 700 * 300 }, () => (next() < 0.1 ? 0 : (next() - 0.5) * 8)));
    const values = bf16ToF32(bits);
    for (const shape of [[700, 300], [7, 100, 300], [210_000]])
      expect(summarize(bits, shape)).toEqual(summarize(values, shape));
  });
});
