// Log-probabilities for the OpenAI-compatible endpoints, from the engine's public methods only: a prompt's (echo)
// from the teacher-forced `inspect`, generated tokens' from `generate`'s onLogits hook. Both take the engine's one
// log-softmax (engine/head.ts, LogSoftmax).
import {
  LogSoftmax,
  type CallControl,
  type Gemma3Engine,
  type GenerateResult,
  type WeightSource,
} from '../engine/index.ts';

/** OpenAI's limit on `logprobs` (legacy completions) and `top_logprobs` (chat). */
export const MAX_TOP_LOGPROBS = 20;

/** One token with its log-probability and the `k` most likely tokens at its position, most likely first. */
export type TokenLogprob = { id: number; logprob: number; top: { id: number; logprob: number }[] };

/**
 * log-softmax of one position's logits: the log-probability of token `id` (default: the greedy choice, the first
 * maximum) and the top `k` (ties go to the lower id, as greedy decoding picks), each rounded to float32.
 */
export function logSoftmaxAt(logits: Float32Array, k: number, id?: number): TokenLogprob {
  const softmax = new LogSoftmax(1, logits.length, Math.max(k, 1));
  softmax.add(logits, 0, logits.length);
  const lse = softmax.logSumExp(0);
  const best = softmax.topOf(0);
  id ??= best.ids[0] ?? 0;
  return {
    id,
    logprob: Math.fround(logits[id]! - lse),
    top: best.ids.slice(0, k).map((t, j) => ({ id: t, logprob: Math.fround(best.values[j]! - lse) })),
  };
}

/**
 * Collects the generated tokens' log-probabilities through `generate`'s hooks (one sequence). Each step's greedy
 * choice is scored when its logits arrive; a stop token (<eos>, <end_of_turn>) is not an output token, so its entry
 * is kept apart in `stop`.
 */
export class GenerationLogprobs {
  readonly tokens: TokenLogprob[] = [];
  stop: TokenLogprob | null = null;
  private choice: TokenLogprob | null = null;

  constructor(private readonly k: number) {}

  /** For GenerateOptions.onLogits. */
  readonly onLogits = (_: number, logits: Float32Array): void => {
    this.choice = logSoftmaxAt(logits, this.k);
  };

  /** For GenerateOptions.onToken: the token greedy decoding chose, which the last logits scored. */
  readonly onToken = (_: number, token: number): void => {
    if (this.choice?.id !== token)
      throw new Error(`generate chose token ${token}, but its logits' greedy choice is ${this.choice?.id}`);
    this.tokens.push(this.choice);
  };

  /** After generate: the stop token's entry, when generation ended on one. */
  finish(result: GenerateResult): this {
    if (result.stopReason === 'eos' || result.stopReason === 'end_of_turn') this.stop = this.choice;
    return this;
  }
}

/**
 * Teacher-forced log-probabilities of a prompt's tokens 1…T−1 (token 0 has none: nothing precedes it), with the
 * top `k` at each position, from one `inspect` run.
 */
export async function promptLogprobs(
  engine: Pick<Gemma3Engine, 'inspect'>,
  ids: number[],
  weights: WeightSource,
  k: number,
  control: CallControl = {},
): Promise<TokenLogprob[]> {
  if (ids.length < 2) return [];
  const [result] = await engine.inspect([{ ids, start: 0, end: ids.length - 1 }], {
    layers: [],
    topK: k,
    weights,
    ...control,
  });
  return result!.positions.map((p, i) => ({
    id: ids[p + 1]!,
    logprob: result!.nextTokenLogprobs[i]!,
    top: result!.topK[i]!.ids.map((id, j) => ({ id, logprob: result!.topK[i]!.logprobs[j]! })),
  }));
}
