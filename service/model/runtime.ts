// Gemma 3 text runtime on onnxruntime-node: greedy generation with a JS-side KV cache, teacher-forced inspection,
// and full-sequence logits. One graph builder (gemma3-graph.ts); weights bound as graph inputs (editable, fed from
// JS memory at every run) or as external initializers into the safetensors files (fixed, fastest).
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import type { Checkpoint } from './checkpoint.ts';
import type { Gemma3TextConfig } from './config.ts';
import { buildGemma3Graph, FLOAT_MIN, type WeightBinding } from './gemma3-graph.ts';
import { embedTokensName } from '../weights/names.ts';
import { PAD_ID, STOP_IDS } from './tokenizer.ts';
import { bf16ToF32 } from './bf16.ts';
import { checkpointSource, type WeightSource } from './weight-source.ts'; // TEMPORARY: engine rewrite replaces this

export type Device = 'cpu' | 'cuda';

export type EngineOptions = {
  checkpoint: Checkpoint;
  /** "inputs": every weight is fed from JS (editable). "initializers": every weight is an external initializer.
   *  A set: those names are inputs, the rest initializers (a patched model: only touched tensors are fed). */
  weights: 'inputs' | 'initializers' | ReadonlySet<string>;
  /** The float32 values of input-bound weights; default: decoded from the checkpoint once. */
  source?: WeightSource;
  device?: Device;
  threads?: number;
  /** Write onnxruntime's per-node profile (JSON) with this file prefix: for benchmarks. */
  profilePrefix?: string;
};

export type GenerateResult = {
  promptIds: number[];
  outputIds: number[];
  promptTokens: number;
  outputTokens: number;
  stopReason: 'eos' | 'end_of_turn' | 'max_tokens' | 'stop_rule';
};

export type InspectRequest = {
  /** Full token ids (prompt + continuation). */
  ids: number[];
  /** First position whose next-token distribution is returned (logprobs of ids[start+1…]). */
  start: number;
  /** One past the last position. */
  end: number;
};

export type InspectResult = {
  positions: number[];
  /** Log-probability of the actual next token ids[p+1] at each position p (NaN at the last position of ids). */
  nextTokenLogprobs: number[];
  topK: { ids: number[]; logprobs: number[] }[];
  /** Residual stream after each requested layer: hidden[layer][k] is a Float32Array of hidden_size. */
  hidden: Record<number, Float32Array[]>;
};

export type GenerateOptions = {
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

export const MAX_BATCH = 8;

export class Gemma3Engine {
  private sessions = new Map<string, Promise<ort.InferenceSession>>();
  private readonly inputNames: ReadonlySet<string>;
  private readonly allInputs: boolean;
  private readonly source: WeightSource;

  private constructor(
    readonly checkpoint: Checkpoint,
    readonly config: Gemma3TextConfig,
    private readonly options: EngineOptions,
  ) {
    const all = [...checkpoint.tensors.keys()].filter((n) => n.startsWith(config.tensor_prefix));
    const requested = options.weights === 'inputs' ? new Set(all) : options.weights === 'initializers' ? new Set<string>() : options.weights;
    // The embedding is always fed from JS: onnxruntime does not constant-fold the BF16→float32 Cast of a tensor this
    // large (1.2 GB at 1B), so as an initializer it would be cast again on every run; as an input it costs nothing,
    // since the tied head reads it at M = 1 and the Gather reads a few rows.
    this.inputNames = new Set([...requested, embedTokensName(config.tensor_prefix)]);
    this.allInputs = all.every((name) => this.inputNames.has(name));
    this.source = options.source ?? checkpointSource(checkpoint);
  }

  static async create(options: EngineOptions): Promise<Gemma3Engine> {
    const engine = new Gemma3Engine(options.checkpoint, options.checkpoint.config, options);
    await engine.session('decode'); // build now so that errors surface at start-up
    return engine;
  }

  /**
   * Greedy decoding of a left-padded batch of ≤ 8 prompts (token ids, e.g. from Tokenizer.chatIds).
   * Each sequence stops at <eos> (1), <end_of_turn> (106) or maxNewTokens; the stop token is not in outputIds.
   */
  async generate(prompts: number[][], options: GenerateOptions): Promise<GenerateResult[]> {
    const { maxNewTokens, weights } = options;
    if (prompts.length === 0 || prompts.length > MAX_BATCH) throw new Error(`generate takes 1…${MAX_BATCH} prompts, got ${prompts.length}`);
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) throw new Error(`maxNewTokens must be a positive integer, got ${maxNewTokens}`);
    for (const p of prompts) this.checkIds(p);
    const session = await this.session('decode');
    const B = prompts.length;
    const T = Math.max(...prompts.map((p) => p.length));
    const pads = prompts.map((p) => T - p.length);
    const cache = new KvCache(this.config, B, T + maxNewTokens);
    const feedsWeights = this.weightFeeds(weights);

    // Prefill: all prompt tokens at once, no past.
    const ids = new BigInt64Array(B * T);
    const positions = new BigInt64Array(B * T);
    prompts.forEach((p, b) => {
      for (let t = 0; t < T; t++) {
        const real = t - pads[b]!;
        ids[b * T + t] = BigInt(real >= 0 ? p[real]! : PAD_ID);
        positions[b * T + t] = BigInt(Math.max(real, 0));
      }
    });
    let out = await session.run({
      ...feedsWeights,
      ...cache.emptyPast(),
      input_ids: new ort.Tensor('int64', ids, [B, T]),
      position_ids: new ort.Tensor('int64', positions, [B, T]),
      ...this.masks(pads, 0, T, 0),
      gather_index: new ort.Tensor('int64', BigInt64Array.from({ length: B }, () => BigInt(T - 1)), [B, 1]),
    });
    cache.store(out, 0, T);

    const results: GenerateResult[] = prompts.map((p) => ({ promptIds: p, outputIds: [], promptTokens: p.length, outputTokens: 0, stopReason: 'max_tokens' }));
    const done = new Array<boolean>(B).fill(false);
    let length = T;
    for (let step = 0; ; step++) {
      const logits = out.logits!.data as Float32Array;
      const next = new BigInt64Array(B);
      for (let b = 0; b < B; b++) {
        if (done[b]) continue;
        options.onLogits?.(b, logits.subarray(b * this.config.vocab_size, (b + 1) * this.config.vocab_size));
        const token = argmax(logits, b * this.config.vocab_size, this.config.vocab_size);
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
        next[b] = BigInt(token);
      }
      if (done.every(Boolean)) break;
      // One decode step for the whole batch; finished sequences ride along and are ignored.
      out = await session.run({
        ...feedsWeights,
        ...cache.past(),
        input_ids: new ort.Tensor('int64', next, [B, 1]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from(pads, (pad) => BigInt(length - pad)), [B, 1]),
        ...this.masks(pads, length, 1, cache.slots),
        gather_index: new ort.Tensor('int64', new BigInt64Array(B), [B, 1]),
      });
      cache.store(out, length, 1);
      length++;
    }
    return results;
  }

  /** Float32 logits of every position of one sequence, [T, vocab], computed in chunks through the KV cache. */
  async logits(ids: number[], options: { chunk?: number; weights?: WeightSource } = {}): Promise<Float32Array> {
    const { chunk = 64, weights } = options;
    this.checkIds(ids);
    const session = await this.session('decode');
    const T = ids.length;
    const V = this.config.vocab_size;
    const cache = new KvCache(this.config, 1, T);
    const result = new Float32Array(T * V);
    const feedsWeights = this.weightFeeds(weights);
    for (let start = 0; start < T; start += chunk) {
      const n = Math.min(chunk, T - start);
      const out = await session.run({
        ...feedsWeights,
        ...(start === 0 ? cache.emptyPast() : cache.pastPrefix(start)),
        input_ids: new ort.Tensor('int64', BigInt64Array.from(ids.slice(start, start + n), BigInt), [1, n]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(start + i)), [1, n]),
        ...this.masks([0], start, n, start),
        gather_index: new ort.Tensor('int64', BigInt64Array.from({ length: n }, (_, i) => BigInt(i)), [1, n]),
      });
      cache.store(out, start, n);
      result.set(out.logits!.data as Float32Array, start * V);
    }
    return result;
  }

  /** Teacher-forced inspection of ≤ 4 sequences: next-token log-probabilities, top-k, and residual streams. */
  async inspect(requests: InspectRequest[], options: { layers: number[]; topK: number; weights?: WeightSource }): Promise<InspectResult[]> {
    const { weights } = options;
    const layers = [...new Set(options.layers)].sort((a, b) => a - b);
    for (const layer of layers) {
      if (!Number.isInteger(layer) || layer < 0 || layer >= this.config.num_hidden_layers) throw new Error(`layer ${layer} is outside 0…${this.config.num_hidden_layers - 1}`);
    }
    const session = await this.session(`inspect:${options.topK}:${layers.join(',')}`, { layers, topK: options.topK });
    const results: InspectResult[] = [];
    // One sequence per run: sequences differ in length and inspection is rare, so padding buys nothing.
    for (const request of requests) {
      this.checkIds(request.ids);
      const T = request.ids.length;
      if (!(Number.isInteger(request.start) && Number.isInteger(request.end) && 0 <= request.start && request.start < request.end && request.end <= T)) {
        throw new Error(`positions [${request.start}, ${request.end}) are not a non-empty range inside the ${T}-token sequence`);
      }
      const K = request.end - request.start;
      const positions = Array.from({ length: K }, (_, k) => request.start + k);
      const targets = positions.map((p) => (p + 1 < T ? request.ids[p + 1]! : 0));
      const out = await session.run({
        ...this.weightFeeds(weights),
        ...new KvCache(this.config, 1, 0).emptyPast(),
        input_ids: new ort.Tensor('int64', BigInt64Array.from(request.ids, BigInt), [1, T]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from({ length: T }, (_, i) => BigInt(i)), [1, T]),
        ...this.masks([0], 0, T, 0),
        gather_index: new ort.Tensor('int64', BigInt64Array.from(positions, BigInt), [1, K]),
        target_ids: new ort.Tensor('int64', BigInt64Array.from(targets, BigInt), [1, K]),
      });
      const picked = out.target_logprobs!.data as Float32Array;
      const topValues = out.topk_logprobs!.data as Float32Array;
      const topIds = out.topk_ids!.data as BigInt64Array;
      const k = options.topK;
      const H = this.config.hidden_size;
      const hidden: Record<number, Float32Array[]> = {};
      for (const layer of layers) {
        const data = out[`hidden.${layer}`]!.data as Float32Array;
        hidden[layer] = positions.map((_, i) => data.slice(i * H, (i + 1) * H));
      }
      results.push({
        positions,
        nextTokenLogprobs: positions.map((p, i) => (p + 1 < T ? picked[i]! : NaN)),
        topK: positions.map((_, i) => ({ ids: Array.from(topIds.subarray(i * k, (i + 1) * k), Number), logprobs: Array.from(topValues.subarray(i * k, (i + 1) * k)) })),
        hidden,
      });
    }
    return results;
  }

  async close(): Promise<void> {
    for (const session of this.sessions.values()) await (await session).release();
    this.sessions.clear();
  }

  private checkIds(ids: number[]): void {
    if (ids.length === 0) throw new Error('a sequence needs at least one token');
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.config.vocab_size) throw new Error(`token id ${id} is outside the vocabulary 0…${this.config.vocab_size - 1}`);
    }
  }

  private weightFeeds(weights?: WeightSource): Record<string, ort.Tensor> {
    const source = weights ?? this.source;
    const feeds: Record<string, ort.Tensor> = {};
    // TEMPORARY: engine rewrite replaces this. Decoded at every run, never cached: overlays are mutated in place.
    for (const name of this.inputNames) feeds[name] = new ort.Tensor('float32', bf16ToF32(source.bf16(name)), this.checkpoint.info(name).shape);
    return feeds;
  }

  /** Additive masks [B,1,T,S] for T new tokens at cache slots start…start+T−1 with `past` slots before them. */
  private masks(pads: number[], start: number, T: number, past: number): Record<string, ort.Tensor> {
    const B = pads.length;
    const S = past + T;
    const window = this.config.sliding_window;
    const full = new Float32Array(B * T * S).fill(FLOAT_MIN);
    const sliding = new Float32Array(B * T * S).fill(FLOAT_MIN);
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) {
        const query = start + t; // the query's cache slot; key slot j < past is cache slot j, j ≥ past is slot start + (j − past)
        const row = (b * T + t) * S;
        for (let j = 0; j < S; j++) {
          // Cache slots at or after `start` are not written yet (the new tokens' keys come after the past).
          if (j < past && j >= start) continue;
          const key = j < past ? j : start + (j - past);
          const visible = (key >= pads[b]! && key <= query) || key === query; // padding rows see themselves: no NaN
          if (!visible) continue;
          full[row + j] = 0;
          if (query - key < window) sliding[row + j] = 0;
        }
      }
    }
    return { mask_full: new ort.Tensor('float32', full, [B, 1, T, S]), mask_sliding: new ort.Tensor('float32', sliding, [B, 1, T, S]) };
  }

  private session(key: string, inspect?: { layers: number[]; topK: number }): Promise<ort.InferenceSession> {
    let session = this.sessions.get(key);
    if (!session) {
      session = this.createSession(inspect);
      this.sessions.set(key, session);
      session.catch(() => this.sessions.delete(key));
    }
    return session;
  }

  private async createSession(inspect?: { layers: number[]; topK: number }): Promise<ort.InferenceSession> {
    const bind = (name: string): WeightBinding => {
      if (this.inputNames.has(name)) return { kind: 'input' };
      const info = this.checkpoint.info(name);
      return { kind: 'external', location: path.basename(info.file), offset: info.offset, length: info.byteLength, dtype: info.dtype as 'BF16', shape: info.shape };
    };
    const model = buildGemma3Graph(this.config, inspect ? { bind, logprobs: { topK: inspect.topK }, hiddenLayers: inspect.layers } : { bind, logits: true });
    const sessionOptions: ort.InferenceSession.SessionOptions = {
      executionProviders: [this.options.device === 'cuda' ? 'cuda' : 'cpu'],
      graphOptimizationLevel: 'all',
      intraOpNumThreads: this.options.threads ?? defaultThreads(),
      ...(this.options.profilePrefix ? { enableProfiling: true, profileFilePrefix: this.options.profilePrefix } : {}),
    };
    if (!this.allInputs) {
      // External initializers resolve against the checkpoint folder (ORT refuses paths that leave it).
      sessionOptions.extra = { session: { model_external_initializers_file_folder_path: this.checkpoint.dir } };
    }
    return ort.InferenceSession.create(model, sessionOptions);
  }
}

/** The KV cache in JS buffers: [B, nKV, slots, D] per layer, written from the graph's present slices. */
class KvCache {
  private readonly keys: Float32Array[];
  private readonly values: Float32Array[];

  constructor(
    private readonly config: Gemma3TextConfig,
    private readonly batch: number,
    readonly slots: number,
  ) {
    const size = batch * config.num_key_value_heads * slots * config.head_dim;
    this.keys = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(size));
    this.values = Array.from({ length: config.num_hidden_layers }, () => new Float32Array(size));
  }

  emptyPast(): Record<string, ort.Tensor> {
    return this.feeds(() => new Float32Array(0), 0);
  }

  /** The whole buffer; unfilled slots are masked out. */
  past(): Record<string, ort.Tensor> {
    return this.feeds((buffer) => buffer, this.slots);
  }

  /** The first `length` slots (only contiguous when batch == 1 and nKV == 1… so copied per head). */
  pastPrefix(length: number): Record<string, ort.Tensor> {
    const { num_key_value_heads: nKV, head_dim: D } = this.config;
    return this.feeds((buffer) => {
      const prefix = new Float32Array(this.batch * nKV * length * D);
      for (let bh = 0; bh < this.batch * nKV; bh++) prefix.set(buffer.subarray(bh * this.slots * D, (bh * this.slots + length) * D), bh * length * D);
      return prefix;
    }, length);
  }

  /** Copy the graph's present slices [B, nKV, T, D] into slots start…start+T−1. */
  store(outputs: ort.InferenceSession.OnnxValueMapType, start: number, T: number): void {
    const { num_key_value_heads: nKV, head_dim: D } = this.config;
    for (let layer = 0; layer < this.config.num_hidden_layers; layer++) {
      for (const [name, buffer] of [[`present_key.${layer}`, this.keys[layer]!], [`present_value.${layer}`, this.values[layer]!]] as const) {
        const slice = outputs[name]!.data as Float32Array;
        for (let bh = 0; bh < this.batch * nKV; bh++) buffer.set(slice.subarray(bh * T * D, (bh + 1) * T * D), (bh * this.slots + start) * D);
      }
    }
  }

  private feeds(view: (buffer: Float32Array) => Float32Array, length: number): Record<string, ort.Tensor> {
    const { num_key_value_heads: nKV, head_dim: D } = this.config;
    const feeds: Record<string, ort.Tensor> = {};
    for (let layer = 0; layer < this.config.num_hidden_layers; layer++) {
      feeds[`past_key.${layer}`] = new ort.Tensor('float32', view(this.keys[layer]!), [this.batch, nKV, length, D]);
      feeds[`past_value.${layer}`] = new ort.Tensor('float32', view(this.values[layer]!), [this.batch, nKV, length, D]);
    }
    return feeds;
  }
}

function argmax(values: Float32Array, offset: number, length: number): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < length; i++) {
    const v = values[offset + i]!;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

/**
 * One onnxruntime thread per logical CPU. onnxruntime's own default counts physical cores, which on this kind of
 * 2-vCPU machine is 1: half the memory bandwidth a decode step needs (measured: 220 → 130 ms/token at 1B).
 */
export function defaultThreads(): number {
  return os.availableParallelism();
}
