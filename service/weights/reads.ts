// read_weights: `metadata` (manifest rows, filterable), `slice` (values inline up to LIMITS.inlineElements, else an
// array handle) and `summary` (summary.ts). Slices and summaries read a tensor (by name or alias) or an array
// handle; values are the episode's current values, exact BF16 for tensors (only the selection is decoded from the
// bits; a summary streams over them). Reads never change anything but the episode's handles.
import { IwiError } from '../errors.ts';
import { bf16ToF32 } from '../model/bf16.ts';
import type { HandleInfo } from './handles.ts';
import { LIMITS } from '../api/limits.ts';
import { READ_OP_FIELDS, READ_OPS, type ReadOpName } from '../api/tools.ts';
import type { ManifestFilter, ManifestRow } from './manifest.ts';
import { formatSlice, gather, resolveSlice, type Elements, type Selection, type SliceSpec } from './slice.ts';
import type { Episode } from './store.ts';
import { summarize, type Summary } from './summary.ts';

/** Nested lists of numbers (a bare number for a 0-d selection). */
export type NestedNumbers = number | NestedNumbers[];

export type ReadResult =
  | { op: 'metadata'; count: number; tensors: ManifestRow[] }
  | { op: 'slice'; target: string; slice: string; shape: number[]; values: NestedNumbers }
  | { op: 'slice'; target: string; slice: string; shape: number[]; handle: HandleInfo }
  | ({ op: 'summary'; target: string; slice: string } & Summary);

export function readWeights(episode: Episode, request: unknown): ReadResult {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) throw new IwiError('OP_INVALID', `a read op must be an object, got ${JSON.stringify(request)}`);
  const r = request as Record<string, unknown>;
  if (!(READ_OPS as readonly unknown[]).includes(r.op)) throw new IwiError('OP_INVALID', `unknown read op ${JSON.stringify(r.op)} (known: ${READ_OPS.join(', ')})`);
  const op = r.op as ReadOpName;
  const fields: readonly string[] = READ_OP_FIELDS[op];
  const extra = Object.keys(r).filter((k) => k !== 'op' && !fields.includes(k));
  if (extra.length) throw new IwiError('OP_INVALID', `${op}: unknown field(s) ${extra.join(', ')} (fields: ${fields.join(', ')})`);

  if (op === 'metadata') {
    const tensors = episode.manifest.filter((r.filter ?? {}) as ManifestFilter); // validated by filter()
    return { op, count: tensors.length, tensors };
  }
  const source = target(episode, r);
  if (r.slice !== undefined && r.slice !== null && !Array.isArray(r.slice)) {
    throw new IwiError('SLICE_INVALID', `slice of ${source.label} must be a list with one entry per dimension, got ${JSON.stringify(r.slice)}`);
  }
  if (r.as_handle !== undefined && typeof r.as_handle !== 'boolean') throw new IwiError('OP_INVALID', `slice: as_handle must be true or false, got ${JSON.stringify(r.as_handle)}`);
  const spec = (r.slice ?? []) as SliceSpec;
  const selection = resolveSlice(spec, source.shape, source.label);
  const base = { target: source.label, slice: formatSlice(spec), shape: selection.shape };
  if (op === 'summary') {
    // A summary only reads: a whole tensor needs no copy (and a tensor's selection is gathered as bits, not values).
    const whole = selection.numel === source.data.length && isIdentity(selection);
    return { op, ...base, ...summarize(whole ? source.data : gather(source.data, source.shape, selection), selection.shape) };
  }
  const values = () => decoded(gather(source.data, source.shape, selection));
  if (r.as_handle !== true && selection.numel <= LIMITS.inlineElements) return { op, ...base, values: nest(values(), selection.shape) };
  // A handle holds a float32 copy (it must never change) and is refused before copying if it could never fit.
  const origin = `slice ${source.label}${base.slice}`;
  episode.store.handles.checkFits(selection.numel * Float32Array.BYTES_PER_ELEMENT, selection.shape, origin);
  return { op, ...base, handle: episode.createHandle(values(), selection.shape, origin) };
}

/** A tensor's BF16 bits or a handle's float32 values. */
type Target = { label: string; shape: readonly number[]; data: Elements };

function decoded(elements: Elements): Float32Array {
  return elements instanceof Uint16Array ? bf16ToF32(elements) : elements;
}

/** Every element in storage order: no dim reversed, strided or indexed away. */
function isIdentity(selection: Selection): boolean {
  return selection.dims.every((d) => d.start === 0 && d.step === 1 && d.keep);
}

function target(episode: Episode, r: Record<string, unknown>): Target {
  if ((r.tensor === undefined) === (r.handle === undefined)) {
    throw new IwiError('OP_INVALID', `${String(r.op)}: give exactly one of "tensor" (a name from the manifest) or "handle" (an array handle id)`);
  }
  if (r.handle !== undefined) {
    const handle = episode.store.handles.get(episode.id, r.handle);
    return { label: `handle ${handle.id}`, shape: handle.shape, data: handle.data };
  }
  const row = episode.manifest.resolve(r.tensor);
  return { label: row.name, shape: row.shape, data: episode.bits(row.name) };
}

/** Flat row-major values → nested lists of `shape`. */
export function nest(values: Float32Array, shape: readonly number[]): NestedNumbers {
  if (shape.length === 0) return values[0]!;
  let k = 0;
  const build = (d: number): NestedNumbers[] => {
    const list: NestedNumbers[] = new Array(shape[d]!);
    for (let i = 0; i < shape[d]!; i++) list[i] = d === shape.length - 1 ? values[k++]! : build(d + 1);
    return list;
  };
  return build(0);
}
