// The four tools as the editor sees them: name, description and parameters. The parameters are the request-body
// schemas of service/api/tools.ts, the very objects the service validates every tool request against (ajv, no
// coercion, no removal of unknown fields); the taskset's harness hands them to the editor model.
import { LIMITS, TOOL_ARGS, type ToolDefinition, type ToolName } from '../api/index.ts';

/** A tool's definition, its parameters the route's body schema itself (a TypeBox schema is a plain JSON Schema object). */
const define = (name: ToolName, description: string[]): ToolDefinition => ({
  name,
  description: description.join('\n'),
  parameters: TOOL_ARGS[name] as object as ToolDefinition['parameters'],
});

export const READ_WEIGHTS = define('read_weights', [
  "Read the target's weights (your episode's current values, exact BF16). Ops:",
  '- metadata: manifest rows (name, shape, dtype, writable, aliases, layer, kind), optionally filtered.',
  `- slice: values of a tensor or array handle slice; more than ${LIMITS.inlineElements} values (or as_handle) come back as an array handle you can pass to write_weights.`,
  '- summary: count, mean, std, min, max, abs-mean, L2 norm, fraction of zeros, row/column L2-norm quantiles of a tensor or slice.',
  'Costs one tool call; no forward tokens.',
]);

export const WRITE_WEIGHTS = define('write_weights', [
  "Edit the target's weights; every op is validated in full before anything changes, values are rounded to BF16 (nearest, ties to even; NaN/Inf refused), and the result gives the changed elements and ‖Δ‖_F. Ops:",
  '- replace: tensor[slice] ← values',
  '- fill: tensor[slice] ← value',
  '- scale: tensor[slice] ×= factor',
  '- copy: tensor[slice] ← source.tensor[source.slice] (same shape)',
  `- low_rank_add: tensor[slice] += alpha · U Vᵀ, slice 2-d [rows, cols], U [rows, r], V [cols, r], r ≤ ${LIMITS.maxRank}`,
  '- revert: back to pristine weights (to_op_count 0, the default) or to the state after the first to_op_count ops. Reverting never restores budgets.',
  'The tied LM head and embed_tokens are one tensor. Vision tensors are fixed. Costs one tool call.',
]);

export const RUN_TARGET = define('run_target', [
  `Run the target (your edited weights) with greedy decoding on up to ${LIMITS.runSequences} sequences; stops at <end_of_turn>/<eos> or max_new_tokens.`,
  'compare_base also runs the pristine weights on the same sequences (two sequence evaluations each).',
  'Forward tokens: a call must fit prompt + max_new_tokens per evaluation; it is charged the prompt and generated tokens actually evaluated.',
]);

export const INSPECT_TARGET = define('inspect_target', [
  `Teacher-forced inspection of up to ${LIMITS.inspectSequences} sequences (prompt + optional continuation text) on your edited weights:`,
  `per position the log-probability of the actual next token and the top-k next tokens, and, for up to ${LIMITS.inspectLayers} layers, the`,
  'residual stream after that decoder layer (0-based) as an array handle [positions, hidden_size] usable in write_weights.',
  "positions: [start, stop) over the full token sequence, negative = from the end (default: the continuation's predicting positions, or the last 8).",
  'Forward tokens: the full length of every sequence.',
]);

export const TOOL_DEFINITIONS: readonly ToolDefinition[] = [READ_WEIGHTS, WRITE_WEIGHTS, RUN_TARGET, INSPECT_TARGET];
