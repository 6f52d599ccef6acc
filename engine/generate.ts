// Greedy decoding of a left-padded batch: the prompts prefilled in chunks through the KV cache, then one decode step
// for the whole batch per new token until every sequence has stopped.
import { gemmSequences, lastRows, paddedChunk } from './chunk.ts';
import { between, type CallControl } from './control.ts';
import { argmax, type TiedHead } from './head.ts';
import { KvCache } from './kv-cache.ts';
import type { EngineSettings } from './settings.ts';
import type { Gemma3TextModel } from './text-model.ts';
import { STOP_IDS } from './tokenizer.ts';
import type { WeightSource } from './weight-source.ts';

export type GenerateResult = {
  promptIds: number[];
  outputIds: number[];
  promptTokens: number;
  outputTokens: number;
  stopReason: 'eos' | 'end_of_turn' | 'max_tokens' | 'stop_rule';
};

export type GenerateOptions = CallControl & {
  maxNewTokens: number;
  /** Weights for this call (an episode's overlay); default: the engine's source. */
  weights?: WeightSource;
  /** Called with each new token of sequence `index`, as it is decoded (streaming). */
  onToken?: (index: number, token: number) => void;
  /** Called with the next-token logits (vocab_size floats) of sequence `index` before each greedy choice. */
  onLogits?: (index: number, logits: Float32Array) => void;
  /** Extra per-sequence stop rule (e.g. stop strings), checked after each token; the token is kept. */
  stopWhen?: (index: number, outputIds: readonly number[]) => boolean;
};

/**
 * Each sequence stops at <eos> (1), <end_of_turn> (106), its stop rule or maxNewTokens; the stop token is not in
 * outputIds. Prompts are valid token ids (the engine checks them).
 */
export async function greedyGenerate(
  parts: { model: Gemma3TextModel; head: TiedHead; settings: EngineSettings },
  weights: WeightSource,
  prompts: number[][],
  options: GenerateOptions,
): Promise<GenerateResult[]> {
  const { model, head, settings } = parts;
  const { maxNewTokens } = options;
  const B = prompts.length;
  const T = Math.max(...prompts.map((p) => p.length));
  const pads = prompts.map((p) => T - p.length);
  const cache = new KvCache(model.config, B, T + maxNewTokens);
  const V = model.config.vocab_size;

  // Prefill in chunks of padded time; the last chunk's final rows (time T − 1) give the first logits.
  const perChunk = Math.max(1, Math.floor(settings.chunkRows / B));
  const gemm = gemmSequences(
    prompts.map((p) => p.length),
    settings.gemmMinTokens,
  );
  let last: Float32Array = new Float32Array(0);
  for (let start = 0; start < T; start += perChunk) {
    await between(options);
    const chunk = paddedChunk(prompts, pads, start, Math.min(perChunk, T - start), gemm);
    const { final } = await model.forward(weights, cache, chunk, options);
    if (start + chunk.T === T) last = lastRows(final, B, chunk.T, model.config.hidden_size);
  }
  let logits = await head.logits(weights, last, B);

  const results: GenerateResult[] = prompts.map((p) => ({
    promptIds: p,
    outputIds: [],
    promptTokens: p.length,
    outputTokens: 0,
    stopReason: 'max_tokens',
  }));
  const done = new Array<boolean>(B).fill(false);
  const noGemm = new Array<boolean>(B).fill(false); // decode steps: every row in the kernel
  for (let time = T; ; time++) {
    const next = new Int32Array(B);
    for (let b = 0; b < B; b++) {
      if (done[b]) continue;
      options.onLogits?.(b, logits.subarray(b * V, (b + 1) * V));
      const token = argmax(logits, b * V, V);
      if (STOP_IDS.includes(token)) {
        done[b] = true;
        results[b]!.stopReason = token === 1 ? 'eos' : 'end_of_turn';
        continue;
      }
      results[b]!.outputIds.push(token);
      results[b]!.outputTokens++;
      options.onToken?.(b, token);
      if (results[b]!.outputTokens >= maxNewTokens) done[b] = true;
      else if (options.stopWhen?.(b, results[b]!.outputIds)) {
        done[b] = true;
        results[b]!.stopReason = 'stop_rule';
      }
      next[b] = token;
    }
    if (done.every(Boolean)) break;
    await between(options);
    // One decode step for the whole batch; finished sequences ride along and are ignored.
    const positions = Int32Array.from(pads, (pad) => time - pad);
    const step = { ids: next, positions, start: time, T: 1, gemm: noGemm };
    const { final } = await model.forward(weights, cache, step, options);
    logits = await head.logits(weights, final, B);
  }
  return results;
}
