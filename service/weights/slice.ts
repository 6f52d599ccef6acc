// N-d slices of a tensor, shared by reads and writes. One entry per leading dimension (missing trailing dims are
// whole):
//   null                        the whole dimension (NumPy `:`)
//   i                           one index; the dimension is dropped from the selection's shape (NumPy `a[i]`)
//   [start, stop] / [start, stop, step]   NumPy `start:stop:step`; any of them may be null (= omitted)
// Negative indices count from the end and negative steps walk backwards, exactly as in NumPy. Unlike NumPy, a
// bound beyond ±n is refused rather than clamped, and so is a slice that selects nothing: a typo should never edit
// another region than the one asked for.
import { IwiError } from '../../core/errors.ts';
import type { Steps } from '../../core/steps.ts';

export type SliceDim = number | null | [number | null, number | null] | [number | null, number | null, number | null];
export type SliceSpec = SliceDim[];

/** The indices selected along one tensor dimension: start, start + step, …, count of them. */
export type DimSelection = { start: number; step: number; count: number; keep: boolean };

export type Selection = {
  dims: DimSelection[]; // one per tensor dimension
  shape: number[]; // shape of the selected values (dims indexed by a bare integer removed)
  numel: number;
};

/** Validate `spec` against `shape` and resolve it; `tensor` names the tensor in error messages. */
export function resolveSlice(spec: unknown, shape: readonly number[], tensor: string): Selection {
  const entries = spec === undefined || spec === null ? [] : spec;
  if (!Array.isArray(entries))
    throw new IwiError(
      'SLICE_INVALID',
      `slice of "${tensor}" must be a list with one entry per dimension, got ${JSON.stringify(spec)}`,
    );
  if (entries.length > shape.length) {
    throw new IwiError(
      'SLICE_INVALID',
      `slice of "${tensor}" has ${entries.length} entries but the tensor has ${shape.length} dimensions ${JSON.stringify(shape)}`,
    );
  }
  const dims = shape.map((n, d) => resolveDim(entries[d] ?? null, n, d, tensor));
  const selectionShape = dims.filter((s) => s.keep).map((s) => s.count);
  const numel = dims.reduce((a, s) => a * s.count, 1);
  if (numel === 0)
    throw new IwiError(
      'SLICE_INVALID',
      `slice ${formatSlice(entries as SliceSpec)} of "${tensor}" ${JSON.stringify(shape)} selects no elements`,
    );
  return { dims, shape: selectionShape, numel };
}

function resolveDim(entry: unknown, n: number, d: number, tensor: string): DimSelection {
  const where = `dimension ${d} (size ${n}) of "${tensor}"`;
  if (entry === null) return { start: 0, step: 1, count: n, keep: true };
  if (typeof entry === 'number') {
    if (!Number.isSafeInteger(entry))
      throw new IwiError('SLICE_INVALID', `index ${entry} for ${where} is not an integer`);
    if (entry < -n || entry >= n)
      throw new IwiError('SLICE_OUT_OF_RANGE', `index ${entry} is outside ${where}: valid indices are ${-n}…${n - 1}`);
    return { start: entry < 0 ? entry + n : entry, step: 1, count: 1, keep: false };
  }
  if (!Array.isArray(entry) || entry.length < 2 || entry.length > 3) {
    throw new IwiError(
      'SLICE_INVALID',
      `entry ${JSON.stringify(entry)} for ${where} must be null, an integer index, or [start, stop] / [start, stop, step]`,
    );
  }
  for (const v of entry) {
    if (v !== null && !Number.isSafeInteger(v))
      throw new IwiError(
        'SLICE_INVALID',
        `slice ${JSON.stringify(entry)} for ${where}: ${JSON.stringify(v)} is not an integer or null`,
      );
  }
  const [rawStart, rawStop, rawStep = null] = entry as (number | null)[];
  const step = rawStep ?? 1;
  if (step === 0)
    throw new IwiError('SLICE_INVALID', `slice ${JSON.stringify(entry)} for ${where}: step must not be zero`);
  for (const [what, v] of [
    ['start', rawStart],
    ['stop', rawStop],
  ] as const) {
    if (v !== null && v !== undefined && (v < -n || v > n)) {
      throw new IwiError(
        'SLICE_OUT_OF_RANGE',
        `slice ${JSON.stringify(entry)} for ${where}: ${what} ${v} is outside ${-n}…${n} (omit it, or use null, for "to the end")`,
      );
    }
  }
  // CPython's PySlice_AdjustIndices, which NumPy follows.
  const adjust = (v: number | null | undefined, omitted: number): number => {
    if (v === null || v === undefined) return omitted;
    const x = v < 0 ? v + n : v;
    if (x < 0) return step < 0 ? -1 : 0;
    if (x >= n) return step < 0 ? n - 1 : n;
    return x;
  };
  const start = adjust(rawStart, step < 0 ? n - 1 : 0);
  const stop = adjust(rawStop, step < 0 ? -1 : n);
  const count =
    step < 0
      ? stop < start
        ? Math.floor((start - stop - 1) / -step) + 1
        : 0
      : start < stop
        ? Math.floor((stop - start - 1) / step) + 1
        : 0;
  return { start, step, count, keep: true };
}

/** Row-major strides of a shape, in elements. */
export function stridesOf(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = s;
    s *= shape[d]!;
  }
  return strides;
}

/**
 * Visit the selection in row-major order as runs along the last dimension: `visit(offset, k, count, stride)` gets
 * the tensor offset of the run's first element, its index k in the flattened selection, and the run's length and
 * stride (elements). Loops over runs keep per-element work free of index arithmetic.
 */
export function forEachRun(
  selection: Selection,
  tensorShape: readonly number[],
  visit: (offset: number, k: number, count: number, stride: number) => void,
): void {
  const { dims } = selection;
  const strides = stridesOf(tensorShape);
  const last = dims.length - 1;
  if (last < 0) {
    visit(0, 0, 1, 1); // a 0-d tensor
    return;
  }
  const inner = dims[last]!;
  const innerStride = inner.step * strides[last]!;
  const counter = new Array<number>(last).fill(0);
  let k = 0;
  for (;;) {
    let offset = inner.start * strides[last]!;
    for (let d = 0; d < last; d++) offset += (dims[d]!.start + counter[d]! * dims[d]!.step) * strides[d]!;
    visit(offset, k, inner.count, innerStride);
    k += inner.count;
    let d = last - 1;
    while (d >= 0 && ++counter[d]! === dims[d]!.count) counter[d--] = 0;
    if (d < 0) return;
  }
}

/** Element arrays a selection is gathered from: a tensor's BF16 bits or a handle's float32 values. */
export type Elements = Uint16Array | Float32Array;

/**
 * The selected elements of `data` (a tensor of `tensorShape`), flattened row-major, in an array of the same kind
 * (BF16 bits stay bits: decode the selection with bf16ToF32 where values are needed).
 */
export function gather<T extends Elements>(data: T, tensorShape: readonly number[], selection: Selection): T {
  const out = (data instanceof Uint16Array ? new Uint16Array(selection.numel) : new Float32Array(selection.numel)) as T;
  forEachRun(selection, tensorShape, (offset, k, count, stride) => {
    if (stride === 1) out.set(data.subarray(offset, offset + count), k);
    else for (let i = 0; i < count; i++) out[k + i] = data[offset + i * stride]!;
  });
  return out;
}

/** Elements a step of gatherSteps gathers, at least one leading index's worth: ~2 M. */
const GATHER_STEP = 1 << 21;

/**
 * gather() as steps (core/steps.ts): a few indices of the leading dim at a time, ~2 M elements a step, each piece
 * handed to `take` with its offset in the flattened selection (a summary copies it into one array of bits, a handle
 * decodes it into its float32 values).
 */
export function* gatherSteps<T extends Elements>(
  data: T,
  tensorShape: readonly number[],
  selection: Selection,
  take: (piece: T, k: number) => void,
): Steps<void> {
  const lead = selection.dims[0];
  if (!lead || selection.numel === 0) return take(gather(data, tensorShape, selection), 0);
  const perIndex = selection.numel / lead.count;
  const indices = Math.max(1, Math.floor(GATHER_STEP / perIndex));
  for (let i = 0; i < lead.count; i += indices) {
    if (i > 0) yield;
    const count = Math.min(indices, lead.count - i);
    const dims = [{ ...lead, start: lead.start + i * lead.step, count }, ...selection.dims.slice(1)];
    take(gather(data, tensorShape, { dims, shape: selection.shape, numel: count * perIndex }), i * perIndex);
  }
}

/** NumPy-like text of a slice for messages and op descriptions, e.g. `[0:4, ::-1, 3]`. */
export function formatSlice(spec: SliceSpec | undefined): string {
  if (!spec || spec.length === 0) return '[:]';
  const part = (e: SliceDim): string => {
    if (e === null) return ':';
    if (typeof e === 'number') return String(e);
    if (!Array.isArray(e)) return JSON.stringify(e); // only in messages about a malformed slice
    const [a, b, c] = e;
    const text = `${a ?? ''}:${b ?? ''}`;
    return c === null || c === undefined ? text : `${text}:${c}`;
  };
  return `[${spec.map(part).join(', ')}]`;
}
