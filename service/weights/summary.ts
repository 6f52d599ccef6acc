// The fixed statistics of `read_weights summary` over a tensor, a slice or an array handle. Accumulated in float64.
// std is the population std (NumPy's default ddof=0). Row and column L2 norms treat the selection as a matrix
// [product of the leading dims, last dim]; quantiles interpolate linearly between order statistics (NumPy's
// default "linear" method). A 0-d or 1-d selection has no row/column quantiles (null). BF16 bits are decoded in
// chunks of rows as they are streamed: a summary of the 4B's embedding (671 M elements) holds no float32 copy of it.
import { bf16ToF32 } from '../../engine/index.ts';
import { runSteps, type Steps } from '../../core/steps.ts';

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

export function summarize(elements: Float32Array | Uint16Array, shape: readonly number[]): Summary {
  return runSteps(summarySteps(elements, shape));
}

/** Values a step of summarySteps goes through before it yields: ~2 M, some tens of milliseconds. */
const STEP_ELEMENTS = 1 << 21;

/** summarize() as steps (core/steps.ts): it yields after each ~2 M values of either pass. */
export function* summarySteps(elements: Float32Array | Uint16Array, shape: readonly number[]): Steps<Summary> {
  const n = elements.length;
  const cols = shape.length >= 2 ? shape[shape.length - 1]! : n;
  const rows = n / cols;
  const rowSq = new Float64Array(shape.length >= 2 ? rows : 0);
  const colSq = new Float64Array(shape.length >= 2 ? cols : 0);
  let sum = 0,
    sumAbs = 0,
    sumSquares = 0,
    zeros = 0,
    min = Infinity,
    max = -Infinity;
  let sinceYield = 0;
  for (const { values, start } of valueChunks(elements, shape.length >= 2 ? cols : 1)) {
    sinceYield += values.length;
    if (sinceYield >= STEP_ELEMENTS) {
      sinceYield = 0;
      yield;
    }
    for (let i = 0; i < values.length; i++) {
      const x = values[i]!;
      sum += x;
      sumAbs += Math.abs(x);
      sumSquares += x * x;
      if (x === 0) zeros++;
      if (x < min) min = x;
      if (x > max) max = x;
    }
    if (shape.length < 2) continue;
    for (let r = 0; r < values.length / cols; r++) {
      let s = 0;
      for (let c = 0; c < cols; c++) {
        const x = values[r * cols + c]!;
        s += x * x;
        colSq[c] += x * x;
      }
      rowSq[start / cols + r] = s;
    }
  }
  const mean = sum / n;
  let centred = 0; // second pass: exact enough for any spread, unlike E[x²] − E[x]²
  for (const { values } of valueChunks(elements, 1)) {
    sinceYield += values.length;
    if (sinceYield >= STEP_ELEMENTS) {
      sinceYield = 0;
      yield;
    }
    for (let i = 0; i < values.length; i++) centred += (values[i]! - mean) ** 2;
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
    row_norm_quantiles: shape.length >= 2 ? quantiles(rowSq.map(Math.sqrt)) : null,
    col_norm_quantiles: shape.length >= 2 ? quantiles(colSq.map(Math.sqrt)) : null,
  };
}

const CHUNK_ELEMENTS = 1 << 16;

/**
 * The elements as float32 values in chunks of whole rows (`rowLength` elements each), in order: float32 values as
 * views, BF16 bits decoded into one reused chunk, so a tensor is never copied whole.
 */
function* valueChunks(
  elements: Float32Array | Uint16Array,
  rowLength: number,
): Generator<{ values: Float32Array; start: number }> {
  const step = Math.max(1, Math.floor(CHUNK_ELEMENTS / rowLength)) * rowLength;
  const buffer = elements instanceof Uint16Array ? new Float32Array(Math.min(step, elements.length)) : undefined;
  for (let start = 0; start < elements.length; start += step) {
    const count = Math.min(step, elements.length - start);
    const chunk = elements.subarray(start, start + count);
    yield {
      values: buffer ? bf16ToF32(chunk as Uint16Array, buffer.subarray(0, count)) : (chunk as Float32Array),
      start,
    };
  }
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
