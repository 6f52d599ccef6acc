// The four tools as the editor sees them: name, description and JSON Schema parameters. The service validates every
// tool request body against exactly these schemas (ajv, no coercion, no removal of unknown fields), and the taskset's
// Toolset hands the same objects to the editor model. Deeper checks (a slice inside a tensor, an operand's shape) are
// the weight store's, with error messages that say what was wrong.
import { LIMITS } from '../weights/limits.ts';
import { TENSOR_KINDS } from '../weights/manifest.ts';
import { WRITE_OPS } from '../weights/ops.ts';

export type JsonSchema = Record<string, unknown>;
export type ToolDefinition = { name: ToolName; description: string; parameters: JsonSchema };
export const TOOL_NAMES = ['read_weights', 'write_weights', 'run_target', 'inspect_target'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Hard caps of one call (the episode's budgets may be lower). */
export const CALL_CAPS = Object.freeze({
  runSequences: 8, // = the engine's batch limit
  inspectSequences: 4,
  inspectLayers: 4,
  maxNewTokens: 512,
  messagesPerSequence: 32,
  messageChars: 16_000,
  topK: 20,
});

const sliceDim = {
  anyOf: [
    { type: 'null' },
    { type: 'integer' },
    { type: 'array', minItems: 2, maxItems: 3, items: { anyOf: [{ type: 'integer' }, { type: 'null' }] } },
  ],
};
const slice = {
  type: 'array',
  maxItems: 8,
  items: sliceDim,
  description:
    'One entry per leading dimension (missing trailing dims are whole): null = whole dim, i = one index (dim dropped), [start, stop] or [start, stop, step] as in NumPy (negative indices and steps allowed; out-of-range bounds are refused, not clamped).',
};
const operand = {
  description: `Nested lists of numbers with the shape the op needs (at most ${LIMITS.inlineOperandElements} numbers inline), or {"handle": "h12"} for an array handle made by read_weights or inspect_target.`,
  anyOf: [
    { type: 'array' },
    { type: 'number' },
    { type: 'object', properties: { handle: { type: 'string' } }, required: ['handle'], additionalProperties: false },
  ],
};
const chatMessage = {
  type: 'object',
  properties: {
    role: { enum: ['system', 'user', 'assistant'] },
    content: { type: 'string', maxLength: CALL_CAPS.messageChars },
  },
  required: ['role', 'content'],
  additionalProperties: false,
};
const sequence = {
  type: 'object',
  description: 'Chat messages (rendered with the target\'s chat template, ending with the model turn) or a raw prompt (tokenized after a BOS, no template).',
  properties: {
    messages: { type: 'array', minItems: 1, maxItems: CALL_CAPS.messagesPerSequence, items: chatMessage },
    prompt: { type: 'string', maxLength: CALL_CAPS.messageChars },
  },
  additionalProperties: false,
};

export const READ_WEIGHTS: ToolDefinition = {
  name: 'read_weights',
  description: [
    'Read the target\'s weights (your episode\'s current values, exact BF16). Ops:',
    '- metadata: manifest rows (name, shape, dtype, writable, aliases, layer, kind), optionally filtered.',
    `- slice: values of a tensor or array handle slice; more than ${LIMITS.inlineElements} values (or as_handle) come back as an array handle you can pass to write_weights.`,
    '- summary: count, mean, std, min, max, abs-mean, L2 norm, fraction of zeros, row/column L2-norm quantiles of a tensor or slice.',
    'Costs one tool call; no forward tokens.',
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      op: { enum: ['metadata', 'slice', 'summary'] },
      filter: {
        type: 'object',
        description: 'metadata only.',
        properties: {
          name: { type: 'string', description: 'glob over names (* and ?), or a substring' },
          layer: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'array', items: { type: 'integer', minimum: 0 }, maxItems: 256 }] },
          kind: { anyOf: [{ enum: [...TENSOR_KINDS] }, { type: 'array', items: { enum: [...TENSOR_KINDS] } }] },
          writable: { type: 'boolean' },
        },
        additionalProperties: false,
      },
      tensor: { type: 'string', description: 'slice/summary: a tensor name (or alias) from the manifest' },
      handle: { type: 'string', description: 'slice/summary: an array handle id instead of a tensor' },
      slice,
      as_handle: { type: 'boolean', description: 'slice: return an array handle even for a small selection' },
    },
    required: ['op'],
    additionalProperties: false,
  },
};

export const WRITE_WEIGHTS: ToolDefinition = {
  name: 'write_weights',
  description: [
    'Edit the target\'s weights; every op is validated in full before anything changes, values are rounded to BF16 (nearest, ties to even; NaN/Inf refused), and the result gives the changed elements and ‖Δ‖_F. Ops:',
    '- replace: tensor[slice] ← values',
    '- fill: tensor[slice] ← value',
    '- scale: tensor[slice] ×= factor',
    '- copy: tensor[slice] ← source.tensor[source.slice] (same shape)',
    `- low_rank_add: tensor[slice] += alpha · U Vᵀ, slice 2-d [rows, cols], U [rows, r], V [cols, r], r ≤ ${LIMITS.maxRank}`,
    '- revert: back to pristine weights (to_op_count 0, the default) or to the state after the first to_op_count ops. Reverting never restores budgets.',
    'The tied LM head and embed_tokens are one tensor. Vision tensors are fixed. Costs one tool call.',
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      op: { enum: [...WRITE_OPS, 'revert'] },
      tensor: { type: 'string', description: 'the tensor to edit (name or alias from the manifest)' },
      slice,
      values: operand,
      value: { type: 'number', description: 'fill: the constant' },
      factor: { type: 'number', description: 'scale: the factor' },
      source: {
        type: 'object',
        description: 'copy: where to copy from',
        properties: { tensor: { type: 'string' }, slice },
        required: ['tensor'],
        additionalProperties: false,
      },
      alpha: { type: 'number', description: 'low_rank_add: the scalar α' },
      u: operand,
      v: operand,
      to_op_count: { type: 'integer', minimum: 0, description: 'revert: keep the first to_op_count ops (default 0: pristine)' },
    },
    required: ['op'],
    additionalProperties: false,
  },
};

export const RUN_TARGET: ToolDefinition = {
  name: 'run_target',
  description: [
    'Run the target (your edited weights) with greedy decoding on up to 8 sequences; stops at <end_of_turn>/<eos> or max_new_tokens.',
    'compare_base also runs the pristine weights on the same sequences (two sequence evaluations each).',
    'Forward tokens: a call must fit prompt + max_new_tokens per evaluation; it is charged the prompt and generated tokens actually evaluated.',
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      sequences: { type: 'array', minItems: 1, maxItems: CALL_CAPS.runSequences, items: sequence },
      max_new_tokens: { type: 'integer', minimum: 1, maximum: CALL_CAPS.maxNewTokens, default: 64 },
      compare_base: { type: 'boolean', default: false },
    },
    required: ['sequences'],
    additionalProperties: false,
  },
};

export const INSPECT_TARGET: ToolDefinition = {
  name: 'inspect_target',
  description: [
    'Teacher-forced inspection of up to 4 sequences (prompt + optional continuation text) on your edited weights:',
    'per position the log-probability of the actual next token and the top-k next tokens, and, for up to 4 layers, the',
    'residual stream after that decoder layer (0-based) as an array handle [positions, hidden_size] usable in write_weights.',
    'positions: [start, stop) over the full token sequence, negative = from the end (default: the continuation\'s predicting positions, or the last 8).',
    'Forward tokens: the full length of every sequence.',
  ].join('\n'),
  parameters: {
    type: 'object',
    properties: {
      sequences: {
        type: 'array',
        minItems: 1,
        maxItems: CALL_CAPS.inspectSequences,
        items: { ...sequence, properties: { ...sequence.properties, continuation: { type: 'string', maxLength: CALL_CAPS.messageChars } } },
      },
      layers: { type: 'array', maxItems: CALL_CAPS.inspectLayers, uniqueItems: true, items: { type: 'integer', minimum: 0 }, default: [] },
      positions: { type: 'array', minItems: 2, maxItems: 2, items: { type: 'integer' } },
      top_k: { type: 'integer', minimum: 1, maximum: CALL_CAPS.topK, default: 5 },
    },
    required: ['sequences'],
    additionalProperties: false,
  },
};

export const TOOL_DEFINITIONS: readonly ToolDefinition[] = [READ_WEIGHTS, WRITE_WEIGHTS, RUN_TARGET, INSPECT_TARGET];
