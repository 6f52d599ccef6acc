// read_weights, its grammar and results: `metadata` (manifest rows, filterable), `slice` (values inline up to
// LIMITS.inlineElements, else an array handle) and `summary` (summary.ts). Slices and summaries read a tensor (by name
// or alias) or an array handle. An episode's weights run the read (EpisodeWeights.read in store.ts).
import { IwiError } from '../../core/errors.ts';
import type { HandleInfo } from './handles.ts';
import { READ_OP_FIELDS, READ_OPS, type ReadOpName } from '../api/tools.ts';
import type { ManifestRow } from './manifest.ts';
import type { Summary } from './summary.ts';

/** Nested lists of numbers (a bare number for a 0-d selection). */
export type NestedNumbers = number | NestedNumbers[];

export type ReadResult =
  | { op: 'metadata'; count: number; tensors: ManifestRow[] }
  | { op: 'slice'; target: string; slice: string; shape: number[]; values: NestedNumbers }
  | { op: 'slice'; target: string; slice: string; shape: number[]; handle: HandleInfo }
  | ({ op: 'summary'; target: string; slice: string } & Summary);

/** The read op's name and fields, checked against READ_OP_FIELDS; their values are checked where they are used (store.ts). */
export type ReadRequest = { op: ReadOpName } & Record<string, unknown>;

export function checkReadRequest(request: unknown): ReadRequest {
  if (typeof request !== 'object' || request === null || Array.isArray(request))
    throw new IwiError('OP_INVALID', `a read op must be an object, got ${JSON.stringify(request)}`);
  const r = request as Record<string, unknown>;
  if (!(READ_OPS as readonly unknown[]).includes(r.op))
    throw new IwiError('OP_INVALID', `unknown read op ${JSON.stringify(r.op)} (known: ${READ_OPS.join(', ')})`);
  const op = r.op as ReadOpName;
  const fields: readonly string[] = READ_OP_FIELDS[op];
  const extra = Object.keys(r).filter((k) => k !== 'op' && !fields.includes(k));
  if (extra.length)
    throw new IwiError('OP_INVALID', `${op}: unknown field(s) ${extra.join(', ')} (fields: ${fields.join(', ')})`);
  return r as ReadRequest;
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
