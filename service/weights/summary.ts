// The fixed statistics of `read_weights summary` over a tensor, a slice or an array handle. Accumulated in float64.
// std is the population std (NumPy's default ddof=0). Row and column L2 norms treat the selection as a matrix
// [product of the leading dims, last dim]; quantiles interpolate linearly between order statistics (NumPy's
// default "linear" method). A 0-d or 1-d selection has no row/column quantiles (null).

/** Quantile levels reported for row and column L2 norms, as keys p0 … p100. */
export const NORM_QUANTILES = [0, 0.05, 0.25, 0.5, 0.75, 0.95, 1] as const;

export type Quantiles = Record<string, number>;

export type Summary = {
  shape: number[];
  count: number;
  mean: number;
  std: number;
  min: number;
  max: number;
  abs_mean: number;
  l2_norm: number;
  zero_fraction: number;
  row_norm_quantiles: Quantiles | null;
  col_norm_quantiles: Quantiles | null;
};

export function summarize(values: Float32Array, shape: readonly number[]): Summary {
  const n = values.length;
  let sum = 0, sumAbs = 0, sumSquares = 0, zeros = 0, min = Infinity, max = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    sum += x;
    sumAbs += Math.abs(x);
    sumSquares += x * x;
    if (x === 0) zeros++;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  const mean = sum / n;
  let centred = 0; // second pass: exact enough for any spread, unlike E[x²] − E[x]²
  for (let i = 0; i < n; i++) centred += (values[i]! - mean) ** 2;
  let rowQ: Quantiles | null = null, colQ: Quantiles | null = null;
  if (shape.length >= 2) {
    const cols = shape[shape.length - 1]!;
    const rows = n / cols;
    const rowSq = new Float64Array(rows);
    const colSq = new Float64Array(cols);
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let c = 0; c < cols; c++) {
        const x = values[r * cols + c]!;
        s += x * x;
        colSq[c] += x * x;
      }
      rowSq[r] = s;
    }
    rowQ = quantiles(rowSq.map(Math.sqrt));
    colQ = quantiles(colSq.map(Math.sqrt));
  }
  return {
    shape: [...shape],
    count: n,
    mean,
    std: Math.sqrt(centred / n),
    min,
    max,
    abs_mean: sumAbs / n,
    l2_norm: Math.sqrt(sumSquares),
    zero_fraction: zeros / n,
    row_norm_quantiles: rowQ,
    col_norm_quantiles: colQ,
  };
}

/** NumPy `quantile(x, q, method="linear")` at NORM_QUANTILES. */
export function quantiles(values: Float64Array): Quantiles {
  const sorted = Float64Array.from(values).sort();
  const result: Quantiles = {};
  for (const q of NORM_QUANTILES) {
    const position = q * (sorted.length - 1);
    const lo = Math.floor(position);
    const hi = Math.min(lo + 1, sorted.length - 1);
    result[`p${Math.round(q * 100)}`] = sorted[lo]! + (position - lo) * (sorted[hi]! - sorted[lo]!);
  }
  return result;
}
