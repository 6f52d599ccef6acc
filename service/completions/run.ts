// One prompt of an OpenAI-compatible request, run inside the target's queue: the echo scored by teacher forcing,
// then greedy generation with the stop strings and log-probabilities asked for.
import type { GenerateResult } from '../../engine/index.ts';
import { GenerationLogprobs, promptLogprobs, type TokenLogprob } from '../logprobs.ts';
import type { Slice } from '../queue.ts';
import type { Target } from '../target.ts';
import { TextOffsets, textOffsets } from '../token-text.ts';
import type { Ask } from './ask.ts';

/** One prompt's run: its echo (text, token offsets, teacher-forced log-probabilities) and what greedy decoding made. */
export type Run = {
  promptIds: number[];
  echo: { text: string; offsets: number[]; logprobs: TokenLogprob[] | null } | null;
  outputIds: number[];
  /** Where each generated token's text starts in the choice's text (after the echo). */
  offsets: TextOffsets;
  generated: GenerationLogprobs | null;
  result: GenerateResult | null;
};

/** Called while a prompt runs (streaming): after its echo is scored, and after each generated token. */
export type RunHooks = { echoed?: (run: Run) => void; token?: (run: Run) => void };

/**
 * One prompt, inside the queue, with the hooks asked for. Both parts run slice by slice (`slice.between`); a gone
 * client's call stops at its next slice (an AbortError).
 */
export async function runPrompt(target: Target, ids: number[], ask: Ask, slice: Slice, hooks: RunHooks = {}) {
  const { tokenizer } = target;
  const control = { between: slice.between, signal: slice.signal };
  let echo: Run['echo'] = null;
  if (ask.echo) {
    const { text, offsets } = textOffsets(tokenizer, ids);
    echo = {
      text,
      offsets,
      logprobs: ask.topK === null ? null : await promptLogprobs(target.engine, ids, ask.weights, ask.topK, control),
    };
  }
  const run: Run = {
    promptIds: ids,
    echo,
    outputIds: [],
    offsets: new TextOffsets(tokenizer, echo?.text.length ?? 0),
    generated: null,
    result: null,
  };
  hooks.echoed?.(run);
  if (ask.maxNewTokens === 0) return run;
  const generated = ask.topK === null ? null : new GenerationLogprobs(ask.topK);
  run.generated = generated;
  const stopAtString = (_: number, outputIds: readonly number[]) =>
    cutAtStop(tokenizer.decode([...outputIds]), ask.stops).stopped;
  const stopWhen = ask.stops.length > 0 ? stopAtString : undefined;
  const [result] = await target.engine.generate([ids], {
    maxNewTokens: ask.maxNewTokens,
    weights: ask.weights,
    ...control,
    stopWhen,
    onLogits: generated?.onLogits,
    onToken: (index, token) => {
      generated?.onToken(index, token);
      run.outputIds.push(token);
      run.offsets.push(token);
      hooks.token?.(run);
    },
  });
  run.result = result!;
  generated?.finish(result!);
  return run;
}

/** The generated text cut at the first stop string, and how many generated tokens it shows (all, unless cut). */
export function generatedText(target: Target, run: Run, ask: Ask): { text: string; stopped: boolean; shown: number } {
  const { text, stopped } = cutAtStop(target.tokenizer.decode(run.outputIds), ask.stops);
  const end = (run.echo?.text.length ?? 0) + text.length;
  return {
    text,
    stopped,
    shown: stopped ? run.offsets.offsets.filter((offset) => offset < end).length : run.outputIds.length,
  };
}

export function finishReason(run: Run): 'stop' | 'length' {
  return run.result === null || run.result.stopReason === 'max_tokens' ? 'length' : 'stop';
}

/** The text up to the first stop string, and whether one was found. */
function cutAtStop(text: string, stops: string[]): { text: string; stopped: boolean } {
  let cut = -1;
  for (const stop of stops) {
    const at = text.indexOf(stop);
    if (at >= 0 && (cut < 0 || at < cut)) cut = at;
  }
  return cut < 0 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true };
}
