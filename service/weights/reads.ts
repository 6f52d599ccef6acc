// read_weights, its grammar and results: `metadata` (manifest rows, filterable), `slice` (values inline up to
// LIMITS.inlineElements, else an array handle) and `summary` (summary.ts). Slices and summaries read a tensor (by name
// or alias) or an array handle. An episode's weights run the read (EpisodeWeights.read in store.ts).
import { IwiError } from '../../core/errors.ts';
import type { HandleInfo } from './handles.ts';
import { READ_OP_FIELDS } from '../api/op-fields.ts';
import type { ReadWeightsArgs } from '../api/tools.ts';
import type { ManifestRow } from './manifest.ts';
import type { Summary } from './summary.ts';

/** Nested lists of numbers (a bare number for a 0-d selection). */
export type NestedNumbers = number | NestedNumbers[];

export type ReadResult =
  | { op: 'metadata'; count: number; tensors: ManifestRow[] }
  | { op: 'slice'; target: string; slice: string; shape: number[]; values: NestedNumbers }
  | { op: 'slice'; target: string; slice: string; shape: number[]; handle: HandleInfo }
  | ({ op: 'summary'; target: string; slice: string } & Summary);

/**
 * A read as the route's body schema typed it (ReadWeightsArgs: the op, each field's type). What the schema cannot say
 * is checked here: which fields each op takes (READ_OP_FIELDS); the values against the weights are checked where they
 * are used (store.ts).
 */
export function checkReadFields(request: ReadWeightsArgs): void {
  const fields: readonly string[] = READ_OP_FIELDS[request.op];
  const extra = Object.keys(request).filter((k) => k !== 'op' && !fields.includes(k));
  if (extra.length)
    throw new IwiError(
      'OP_INVALID',
      `${request.op}: unknown field(s) ${extra.join(', ')} (fields: ${fields.join(', ')})`,
    );
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
