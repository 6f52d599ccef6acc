// The four tools' request bodies (the parameters the editor sees, and what the service validates: one object each), the
// write and read op grammars they carry (the ops and their fields: op-fields.ts), and the reply every tool call gets.
// Deeper checks (a slice inside a tensor, an operand's shape) are the weight store's, with error messages that say what
// was wrong.
import Type, { type Static, type TSchema } from 'typebox';
import { TENSOR_KINDS } from '../../engine/index.ts';
import { BudgetState, ChatMessage, ref } from './common.ts';
import { LIMITS } from './limits.ts';
import { COPY_SOURCE_FIELDS, READ_OPS, WRITE_OP_FIELDS, type ReadField, type WriteField } from './op-fields.ts';

const sliceDim = Type.Union([
  Type.Null(),
  Type.Integer(),
  Type.Array(Type.Union([Type.Integer(), Type.Null()]), { minItems: 2, maxItems: 3 }),
]);
const Slice = Type.Array(sliceDim, {
  maxItems: 8,
  description:
    'One entry per leading dimension (missing trailing dims are whole): null = whole dim, i = one index (dim dropped), [start, stop] or [start, stop, step] as in NumPy (negative indices and steps allowed; out-of-range bounds are refused, not clamped).',
});
const Operand = Type.Union(
  [
    Type.Unsafe<unknown[]>({ type: 'array' }),
    Type.Number(),
    Type.Object({ handle: Type.String() }, { additionalProperties: false }),
  ],
  {
    description: `Nested lists of numbers with the shape the op needs (at most ${LIMITS.inlineOperandElements} numbers inline), or {"handle": "h12"} for an array handle made by read_weights or inspect_target.`,
  },
);

/** copy's source. */
const CopySource = Type.Object(
  { tensor: Type.String(), slice: Type.Optional(Slice) } satisfies Record<(typeof COPY_SOURCE_FIELDS)[number], TSchema>,
  { description: 'copy: where to copy from', additionalProperties: false },
);

/** The schema of every field a write op may carry besides `op` (op-fields.ts), in the order the editor sees them. */
const WRITE_FIELDS = {
  tensor: Type.Optional(Type.String({ description: 'the tensor to edit (name or alias from the manifest)' })),
  slice: Type.Optional(Slice),
  values: Type.Optional(Operand),
  value: Type.Optional(Type.Number({ description: 'fill: the constant' })),
  factor: Type.Optional(Type.Number({ description: 'scale: the factor' })),
  source: Type.Optional(CopySource),
  alpha: Type.Optional(Type.Number({ description: 'low_rank_add: the scalar α' })),
  u: Type.Optional(Operand),
  v: Type.Optional(Operand),
  to_op_count: Type.Optional(
    Type.Integer({ minimum: 0, description: 'revert: keep the first to_op_count ops (default 0: pristine)' }),
  ),
} satisfies Record<WriteField, TSchema>;

export const WriteWeightsArgs = Type.Object(
  { op: Type.Enum(Object.keys(WRITE_OP_FIELDS) as (keyof typeof WRITE_OP_FIELDS)[]), ...WRITE_FIELDS },
  { additionalProperties: false },
);
export type WriteWeightsArgs = Static<typeof WriteWeightsArgs>;

const kind = Type.Enum([...TENSOR_KINDS]);
const READ_FIELDS = {
  filter: Type.Optional(
    Type.Object(
      {
        name: Type.Optional(Type.String({ description: 'glob over names (* and ?), or a substring' })),
        layer: Type.Optional(
          Type.Union([Type.Integer({ minimum: 0 }), Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 256 })]),
        ),
        kind: Type.Optional(Type.Union([kind, Type.Array(kind)])),
        writable: Type.Optional(Type.Boolean()),
      },
      { description: 'metadata only.', additionalProperties: false },
    ),
  ),
  tensor: Type.Optional(Type.String({ description: 'slice/summary: a tensor name (or alias) from the manifest' })),
  handle: Type.Optional(Type.String({ description: 'slice/summary: an array handle id instead of a tensor' })),
  slice: Type.Optional(Slice),
  as_handle: Type.Optional(Type.Boolean({ description: 'slice: return an array handle even for a small selection' })),
} satisfies Record<ReadField, TSchema>;

export const ReadWeightsArgs = Type.Object(
  { op: Type.Enum(READ_OPS), ...READ_FIELDS },
  { additionalProperties: false },
);
export type ReadWeightsArgs = Static<typeof ReadWeightsArgs>;

const SEQUENCE =
  "Chat messages (rendered with the target's chat template, ending with the model turn) or a raw prompt (tokenized after a BOS, no template).";
const Sequence = Type.Object(
  {
    messages: Type.Optional(Type.Array(ChatMessage, { minItems: 1, maxItems: LIMITS.messagesPerSequence })),
    prompt: Type.Optional(Type.String({ maxLength: LIMITS.messageChars })),
  },
  {
    description: SEQUENCE,
    additionalProperties: false,
  },
);

export const RunTargetArgs = Type.Object(
  {
    sequences: Type.Array(Sequence, { minItems: 1, maxItems: LIMITS.runSequences }),
    max_new_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: LIMITS.maxNewTokens, default: 64 })),
    compare_base: Type.Optional(Type.Boolean({ default: false })),
  },
  { additionalProperties: false },
);
export type RunTargetArgs = Static<typeof RunTargetArgs>;

const InspectSequence = Type.Object(
  { ...Sequence.properties, continuation: Type.Optional(Type.String({ maxLength: LIMITS.messageChars })) },
  { description: SEQUENCE, additionalProperties: false },
);

export const InspectTargetArgs = Type.Object(
  {
    sequences: Type.Array(InspectSequence, { minItems: 1, maxItems: LIMITS.inspectSequences }),
    layers: Type.Optional(
      Type.Array(Type.Integer({ minimum: 0 }), { maxItems: LIMITS.inspectLayers, uniqueItems: true, default: [] }),
    ),
    positions: Type.Optional(Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 })),
    top_k: Type.Optional(Type.Integer({ minimum: 1, maximum: LIMITS.topK, default: 5 })),
  },
  { additionalProperties: false },
);
export type InspectTargetArgs = Static<typeof InspectTargetArgs>;

/** Each tool's request body, by tool name: the route's body schema and the editor's parameters are these objects. */
export const TOOL_ARGS = {
  read_weights: ReadWeightsArgs,
  write_weights: WriteWeightsArgs,
  run_target: RunTargetArgs,
  inspect_target: InspectTargetArgs,
} as const;

export type ToolName = keyof typeof TOOL_ARGS;
export const TOOL_NAMES = Object.keys(TOOL_ARGS) as ToolName[];

/** A tool as the editor sees it (and the brief lists it). */
export const ToolDefinition = Type.Object(
  { name: Type.Enum(TOOL_NAMES), description: Type.String(), parameters: Type.Record(Type.String(), Type.Unknown()) },
  { additionalProperties: false },
);
export type ToolDefinition = Static<typeof ToolDefinition>;

/** Every tool call's reply: the tool's own result (see docs/service.md) and the episode's budget after the call. */
export const ToolReply = Type.Object(
  { tool: Type.Enum(TOOL_NAMES), result: Type.Unknown(), budget: ref(BudgetState) },
  { $id: 'ToolReply', additionalProperties: false },
);
export type ToolReply = Static<typeof ToolReply>;
