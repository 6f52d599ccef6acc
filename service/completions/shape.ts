// The OpenAI wire shapes of a run's log-probabilities and usage: legacy completions' `logprobs`
// ({tokens, token_logprobs, top_logprobs, text_offset}) and chat's (`content` with `top_logprobs`).
import { randomBytes } from 'node:crypto';
import type { Tokenizer } from '../../engine/index.ts';
import type { TokenLogprob } from '../logprobs.ts';
import { showToken } from '../token-text.ts';
import type { Ask } from './ask.ts';
import type { Run } from './run.ts';

/**
 * Legacy completions logprobs for a stretch of a choice: the echo (its first token has none), generated tokens
 * [from, to), and the stop token greedy decoding chose, if asked. `top_logprobs` holds the top k and the token itself.
 */
export function legacyLogprobs(
  tokenizer: Tokenizer,
  run: Run,
  parts: { echo?: boolean; from?: number; to?: number; stop?: boolean },
) {
  const tokens: string[] = [];
  const tokenLogprobs: (number | null)[] = [];
  const topLogprobs: (Record<string, number> | null)[] = [];
  const textOffset: number[] = [];
  const add = (id: number, entry: TokenLogprob | null, offset: number) => {
    tokens.push(showToken(tokenizer, id).token);
    tokenLogprobs.push(entry ? entry.logprob : null);
    topLogprobs.push(entry ? topDict(tokenizer, entry) : null);
    textOffset.push(offset);
  };
  if (parts.echo && run.echo)
    run.promptIds.forEach((id, i) => add(id, i === 0 ? null : run.echo!.logprobs![i - 1]!, run.echo!.offsets[i]!));
  for (let i = parts.from ?? 0; i < (parts.to ?? 0); i++)
    add(run.outputIds[i]!, run.generated!.tokens[i]!, run.offsets.offsets[i]!);
  const stop = parts.stop ? run.generated?.stop : null;
  if (stop) add(stop.id, stop, (run.echo?.text.length ?? 0) + tokenizer.decode(run.outputIds).length); // after all the text
  return { tokens, token_logprobs: tokenLogprobs, top_logprobs: topLogprobs, text_offset: textOffset };
}

/** {token: logprob} of the top k and the token itself; a string shown by two ids keeps the likelier. */
function topDict(tokenizer: Tokenizer, entry: TokenLogprob): Record<string, number> {
  const pairs = new Map<string, number>();
  for (const { id, logprob } of [...entry.top, entry]) {
    const token = showToken(tokenizer, id).token;
    if (!pairs.has(token)) pairs.set(token, logprob);
  }
  return Object.fromEntries(pairs); // own properties, so a token spelled "__proto__" is a key like any other
}

export function chatLogprobs(tokenizer: Tokenizer, entries: TokenLogprob[]) {
  const shown = (id: number, logprob: number) => {
    const { token, bytes } = showToken(tokenizer, id);
    return { token, logprob, bytes };
  };
  return {
    content: entries.map((e) => ({
      ...shown(e.id, e.logprob),
      top_logprobs: e.top.map((t) => shown(t.id, t.logprob)),
    })),
    refusal: null,
  };
}

/** Usage as OpenAI counts it: echoed prompt tokens count again as completion tokens. */
export function usageOf(runs: Run[], ask: Ask) {
  const prompt = runs.reduce((sum, r) => sum + r.promptIds.length, 0);
  const completion = runs.reduce((sum, r) => sum + r.outputIds.length + (ask.echo ? r.promptIds.length : 0), 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

export function completionId(ask: Ask): string {
  return `${ask.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
}

export const now = () => Math.floor(Date.now() / 1000);
