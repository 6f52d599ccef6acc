// Every limit of the wire contract, in one place: the caps of one tool call and the weight tools' sizes (LIMITS, which
// the brief reports), and the episode budgets' defaults, whose per-call budgets are those caps. The tool schemas, the
// budget ledger, the weight store, the target and the OpenAI routes read them here; no value is written twice.
import { MAX_BATCH } from '../../engine/index.ts';

export const LIMITS = Object.freeze({
  /** Elements a slice read returns inline as JSON numbers; a larger selection comes back as an array handle. */
  inlineElements: 1024, // elements (≈ 8 k tokens of JSON)
  /** Elements an inline write operand may hold (values, U, V); larger operands go through handles. */
  inlineOperandElements: 65_536, // elements
  /** Live array handles per episode; creating one more evicts the least recently used. */
  handleCount: 64, // handles
  /** Bytes of live array handles per episode (float32 storage); the least recently used are evicted to fit. */
  handleBytes: 256 * 1024 * 1024, // bytes (256 MiB)
  /** Largest rank r of a low_rank_add (U [rows, r], V [cols, r]). */
  maxRank: 64, // rank
  /** Sequences of one run_target call: the engine's batch. */
  runSequences: MAX_BATCH,
  inspectSequences: 4,
  /** Decoder layers whose residual stream one inspect_target call returns. */
  inspectLayers: 4,
  /** New tokens per sequence of one run_target call (docs/service.md: ≤ 256). */
  maxNewTokens: 256,
  messagesPerSequence: 32,
  /** Characters of one chat message, prompt or continuation. */
  messageChars: 16_000,
  topK: 20,
  /** Tokens of one sequence a tool or OpenAI endpoint may send. */
  promptTokens: 4096,
});

export type Limits = typeof LIMITS;

/** The budgets of design.md "Service"; an episode's `budgets` may set any of them. Per-call budgets default to the caps. */
export const DEFAULT_BUDGETS = Object.freeze({
  turns: 64, // editor turns (requests to the editor model)
  tool_calls: 128, // admitted tool calls of any kind
  forward_tokens: 262_144, // tokens through the target: prompts (prefix tokens on every evaluation) + generated
  run_target_calls: 8,
  run_target_sequences_per_call: LIMITS.runSequences,
  run_target_sequence_evaluations: 64, // compare_base counts two per sequence
  run_target_max_new_tokens: LIMITS.maxNewTokens, // per sequence and call
  inspect_target_calls: 4,
  inspect_target_sequences_per_call: LIMITS.inspectSequences,
  inspect_target_sequence_evaluations: 16,
  inspect_target_layers: LIMITS.inspectLayers, // per call
  inspect_target_positions: 64, // per sequence and call
});

export type BudgetName = keyof typeof DEFAULT_BUDGETS;
