// The write and read ops and the fields each takes besides `op`. The tools' schemas (tools.ts) are built from these
// tables, and the weight store checks requests against them (service/weights/ops.ts, reads.ts). Plain data, apart from
// the schemas: an evaluation process replays a patch's ops through the store and so loads this file, and TypeBox (373
// modules, ~0.5 s under tsx's loader) stays out of it.

/** The write ops and their fields: the tool schema's `op` enum and properties and the store's checks (revert too). */
export const WRITE_OP_FIELDS = {
  replace: ['tensor', 'slice', 'values'],
  fill: ['tensor', 'slice', 'value'],
  scale: ['tensor', 'slice', 'factor'],
  copy: ['tensor', 'slice', 'source'],
  low_rank_add: ['tensor', 'slice', 'alpha', 'u', 'v'],
  revert: ['to_op_count'],
} as const;

/** Every field a write op may carry besides `op`. */
export type WriteField = (typeof WRITE_OP_FIELDS)[keyof typeof WRITE_OP_FIELDS][number];

/** The five edits a patch records (revert only moves the episode back along its own op log). */
export type WriteOpName = Exclude<keyof typeof WRITE_OP_FIELDS, 'revert'>;
export const WRITE_OPS = Object.keys(WRITE_OP_FIELDS).filter((op): op is WriteOpName => op !== 'revert');

/** copy's source: its fields. */
export const COPY_SOURCE_FIELDS = ['tensor', 'slice'] as const;

/** The read ops and their fields (the schema and the store's checks alike). */
export const READ_OP_FIELDS = {
  metadata: ['filter'],
  slice: ['tensor', 'handle', 'slice', 'as_handle'],
  summary: ['tensor', 'handle', 'slice'],
} as const;

export type ReadField = (typeof READ_OP_FIELDS)[keyof typeof READ_OP_FIELDS][number];
export type ReadOpName = keyof typeof READ_OP_FIELDS;
export const READ_OPS = Object.keys(READ_OP_FIELDS) as ReadOpName[];
