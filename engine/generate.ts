// Greedy decoding with continuous batching: up to a batch limit of sequences in flight, each with its own KV cache,
// its own time and its own token cap. Free rows take the next waiting sequences: each is prefilled as it would be
// alone (in chunks through its own cache), the short ones packed into one pass (their projections share calls on
// one product path, each keeps its own attention); each decode step runs every live row at one token; a row that stops
// hands its place to the next waiting sequence at once. A row's projections are row-independent and its attention
// reads only its own cache, of the length it has alone, so every sequence's tokens and logits are bitwise what it
// gives alone. The call's products go to buffers it keeps from step to step (call-buffers.ts).
import { CallBuffers } from './call-buffers.ts';
import { lastRows, paddedChunk, type Chunk } from './chunk.ts';
import { between, type CallControl } from './control.ts';
import type { TiedHead } from './head.ts';
import { argmaxRows } from './kernels.ts';
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

/** Hooks and control of a generation; `index` is the sequence's place in the call's list. */
export type GenerateHooks = CallControl & {
  /** Weights for this call (an episode's overlay); default: the engine's source. */
  weights?: WeightSource;
  /** Called with each new token of sequence `index`, as it is decoded (streaming). */
  onToken?: (index: number, token: number) => void;
  /**
   * Called with the next-token logits (vocab_size floats) of sequence `index` before each greedy choice: a view into
   * the call's buffers, valid during the hook only (copy what you keep).
   */
  onLogits?: (index: number, logits: Float32Array) => void;
  /** Extra per-sequence stop rule (e.g. stop strings), checked after each token; the token is kept. */
  stopWhen?: (index: number, outputIds: readonly number[]) => boolean;
  /** Called once sequence `index` has stopped, with its result (its row goes to the next waiting sequence). */
  onDone?: (index: number, result: GenerateResult) => void;
};

export type GenerateOptions = GenerateHooks & { maxNewTokens: number };

/** One sequence of a continuous batch: its prompt's token ids and its own cap on new tokens. */
export type GenerateSequence = { ids: number[]; maxNewTokens: number };

type Parts = { model: Gemma3TextModel; head: TiedHead; settings: EngineSettings };
/** The parts and one call's buffers. */
type CallParts = Parts & { buffers: CallBuffers };

/** A sequence in flight: its cache, the padded time of its next token, the token to feed. */
type Row = { index: number; cache: KvCache; time: number; token: number };

/**
 * Each sequence stops at <eos> (1), <end_of_turn> (106), its stop rule or its own maxNewTokens; the stop token is not
 * in outputIds. At most `maxBatch` sequences are in flight, taken in order. Sequences are valid (the engine checks).
 */
export async function greedyGenerate(
  parts: Parts,
  weights: WeightSource,
  sequences: GenerateSequence[],
  maxBatch: number,
  options: GenerateHooks,
): Promise<GenerateResult[]> {
  const { model, head } = parts;
  const call: CallParts = { ...parts, buffers: new CallBuffers() };
  const V = model.config.vocab_size;
  const results: GenerateResult[] = sequences.map(({ ids }) => ({
    promptIds: ids,
    outputIds: [],
    promptTokens: ids.length,
    outputTokens: 0,
    stopReason: 'max_tokens',
  }));

  /** The greedy choices of R rows of logits [R × V] at once (argmaxRows: the addon's threads and lanes). */
  const greedy = (logits: Float32Array, R: number): Int32Array => {
    const tokens = new Int32Array(R);
    argmaxRows(logits.subarray(0, R * V), V, tokens);
    return tokens;
  };
  /** A row's sequence takes its greedy token (its logits shown to onLogits first); false once it has stopped. */
  const choose = (row: Row, logits: Float32Array, token: number): boolean => {
    const going = next(row, logits, token);
    if (!going) options.onDone?.(row.index, results[row.index]!);
    return going;
  };
  const next = (row: Row, logits: Float32Array, token: number): boolean => {
    const b = row.index;
    const result = results[b]!;
    options.onLogits?.(b, logits);
    if (STOP_IDS.includes(token)) {
      result.stopReason = token === 1 ? 'eos' : 'end_of_turn';
      return false;
    }
    result.outputIds.push(token);
    result.outputTokens++;
    options.onToken?.(b, token);
    row.token = token;
    if (result.outputTokens >= sequences[b]!.maxNewTokens) return false;
    if (options.stopWhen?.(b, result.outputIds)) {
      result.stopReason = 'stop_rule';
      return false;
    }
    return true;
  };

  let live: Row[] = [];
  let waiting = 0;
  for (;;) {
    // Free rows take the next waiting sequences; each chooses its first token at once (and may stop on it).
    while (live.length < maxBatch && waiting < sequences.length) {
      const taken = Array.from(
        { length: Math.min(maxBatch - live.length, sequences.length - waiting) },
        () => waiting++,
      );
      for (const pack of prefillPacks(taken, sequences, parts.settings)) {
        const prefilled = await prefillPack(call, weights, pack, sequences, options);
        const tokens = greedy(prefilled.logits, pack.length);
        pack.forEach((index, i) => {
          const row: Row = { index, cache: prefilled.caches[i]!, time: sequences[index]!.ids.length, token: 0 };
          if (choose(row, prefilled.logits.subarray(i * V, (i + 1) * V), tokens[i]!)) live.push(row);
        });
      }
    }
    if (live.length === 0) break;
    await between(options);
    // One decode step for every live row, each at its own time in its own cache.
    const final = await model.forwardRows(
      weights,
      live.map((row) => ({ cache: row.cache, chunk: decodeChunk(row) })),
      options,
      call.buffers,
    );
    const logits = await head.logits(weights, final, live.length, call.buffers);
    const tokens = greedy(logits, live.length);
    live = live.filter((row, i) => {
      row.time++;
      return choose(row, logits.subarray(i * V, (i + 1) * V), tokens[i]!);
    });
  }
  return results;
}

/**
 * The sequences of `taken` in packs prefilled together: in order, prompts of one chunk packed while their rows fit in
 * one chunk; every longer prompt a pack of its own.
 */
export function prefillPacks(
  taken: number[],
  sequences: GenerateSequence[],
  settings: Pick<EngineSettings, 'chunkRows'>,
): number[][] {
  const length = (index: number) => sequences[index]!.ids.length;
  const out: number[][] = [];
  let rows = 0;
  for (const index of taken) {
    const T = length(index);
    const last = out.at(-1);
    if (last && rows + T <= settings.chunkRows) {
      last.push(index);
      rows += T;
    } else {
      out.push([index]);
      rows = T;
    }
  }
  return out;
}

/**
 * Each sequence's cache and first logits ([pack × V], a row each), prefilled as alone: a pack of one in chunks, a
 * pack of several in one pass.
 */
async function prefillPack(
  parts: CallParts,
  weights: WeightSource,
  pack: number[],
  sequences: GenerateSequence[],
  control: CallControl,
): Promise<{ caches: KvCache[]; logits: Float32Array }> {
  if (pack.length === 1) {
    const { cache, logits } = await prefill(parts, weights, sequences[pack[0]!]!, control);
    return { caches: [cache], logits };
  }
  const { model, head, buffers } = parts;
  const H = model.config.hidden_size;
  const rows = pack.map((index) => {
    const { ids, maxNewTokens } = sequences[index]!;
    const cache = new KvCache(model.config, 1, ids.length + maxNewTokens);
    return {
      cache,
      chunk: paddedChunk([ids], [0], 0, ids.length),
    };
  });
  await between(control);
  const final = await model.forwardRows(weights, rows, control, buffers);
  const last = new Float32Array(pack.length * H);
  let end = 0;
  rows.forEach(({ chunk }, i) => {
    end += chunk.T;
    last.set(final.subarray((end - 1) * H, end * H), i * H);
  });
  return { caches: rows.map(({ cache }) => cache), logits: await head.logits(weights, last, pack.length, buffers) };
}

/** A sequence prefilled alone, in chunks through a cache sized for its prompt and cap: the cache and its first logits. */
async function prefill(
  { model, head, settings, buffers }: CallParts,
  weights: WeightSource,
  { ids, maxNewTokens }: GenerateSequence,
  control: CallControl,
): Promise<{ cache: KvCache; logits: Float32Array }> {
  const T = ids.length;
  const cache = new KvCache(model.config, 1, T + maxNewTokens);
  let last: Float32Array = new Float32Array(0);
  for (let start = 0; start < T; start += settings.chunkRows) {
    await between(control);
    const chunk = paddedChunk([ids], [0], start, Math.min(settings.chunkRows, T - start));
    const { final } = await model.forward(weights, cache, chunk, control, buffers);
    if (start + chunk.T === T) last = lastRows(final, 1, chunk.T, model.config.hidden_size);
  }
  return { cache, logits: await head.logits(weights, last, 1, buffers) };
}

/** A row's decode step: its token at its own position (no padding: time = position). */
function decodeChunk(row: Row): Chunk {
  return {
    ids: Int32Array.of(row.token),
    positions: Int32Array.of(row.time),
    start: row.time,
    T: 1,
  };
}

/**
 * Decode speed at `rows` rows in flight, in generated tokens per second: one short sequence prefilled once, its cache
 * copied into every row, then decode steps timed (after one untimed), each with its head, until `seconds` have passed
 * or `maxSteps` steps (the probe of the batch limit, batch-limit.ts).
 */
export async function decodeSpeed(
  parts: Parts,
  weights: WeightSource,
  rows: number,
  timing: { seconds: number; maxSteps: number },
): Promise<number> {
  const ids = [2, 105, 2364];
  const call: CallParts = { ...parts, buffers: new CallBuffers() };
  const { cache } = await prefill(call, weights, { ids, maxNewTokens: timing.maxSteps + 1 }, {});
  const live: Row[] = Array.from({ length: rows }, (_, index) => ({
    index,
    cache: cache.copy(),
    time: ids.length,
    token: 2,
  }));
  let started = 0;
  let elapsed = 0;
  for (let step = 0; step <= timing.maxSteps; step++) {
    if (step === 1) started = performance.now();
    const final = await parts.model.forwardRows(
      weights,
      live.map((row) => ({ cache: row.cache, chunk: decodeChunk(row) })),
      {},
      call.buffers,
    );
    await parts.head.logits(weights, final, rows, call.buffers);
    for (const row of live) row.time++;
    if (step === 0) continue;
    elapsed = (performance.now() - started) / 1000;
    if (elapsed >= timing.seconds) return (rows * step) / elapsed;
  }
  return (rows * timing.maxSteps) / elapsed;
}
