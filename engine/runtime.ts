// Gemma 3 text runtime: greedy generation, teacher-forced inspection and full-sequence logits, with the weights held
// as BF16 (2 bytes per parameter, exactly the checkpoint's values or an episode's edits) and read where they lie.
//
// A forward pass runs layer by layer over one chunk of tokens. Decode steps and short prompts multiply the BF16
// weights where they lie, in our kernel (kernels.ts: BF16 widened exactly, float32 products and sums, 2 bytes read
// per weight); prompts of GEMM_MIN_TOKENS or more, compute-bound, go through the prefill GEMM (PREFILL_GEMM): AMX's
// tile unit where the CPU has it (kernels.ts, gemmBf16Parts), else onnxruntime's on a float32 tile widened from one
// weight at a time (Gemma3Engine.linear). Each path gives a row bitwise the same result whatever
// rows share the call, and the path depends on the sequence's own length, so a batch gives bitwise what each prompt
// gives alone, and the service's run_target what the evaluator sees. Norms, RoPE, attention and GELU run in small
// onnxruntime graphs (gemma3-graph.ts). Prompts are prefilled in chunks through the KV cache (kv-cache.ts), so no
// call holds more than its cache and one chunk's activations; for many rows the tied head is computed a block of
// vocabulary at a time.
import os from 'node:os';
import * as ort from 'onnxruntime-node';
import type { Checkpoint } from './checkpoint.ts';
import type { Gemma3TextConfig, LayerType } from './config.ts';
import {
  buildAttentionGraph,
  buildGatedGeluGraph,
  buildHeadPartialGraph,
  buildLinearGraph,
  buildNormGraph,
  buildPositionsGraph,
  buildResidualNormGraph,
  embedScale,
} from './gemma3-graph.ts';
import { gemmBf16Parts, kernelInfo, matmulBf16, matmulBf16Parts, widenBf16 } from './kernels.ts';
import { KvCache } from './kv-cache.ts';
import { embedTokensName, expectedTextTensors, finalNormName, layerTensorNames } from './names.ts';
import { PAD_ID, STOP_IDS } from './tokenizer.ts';
import { checkpointSource, type WeightSource } from './weight-source.ts';
import { bf16ToF32 } from './bf16.ts';
import { DeviceProjections, checkDevice, prepareDevice, type Device } from './device.ts';
import { MAX_BATCH } from './batch.ts';

export type { WeightSource } from './weight-source.ts';

export type EngineOptions = {
  checkpoint: Checkpoint;
  /** BF16 weights for runs that name none (default: read from the checkpoint once, on first use). */
  source?: WeightSource;
  /** Where the projections run: 'cpu' (default) our BF16 kernel, else an onnxruntime provider (device.ts). */
  device?: Device;
  threads?: number;
  /** Rows of a prefill chunk (batch × tokens per sequence); tests use small values to cross chunk boundaries. */
  chunkRows?: number;
  /** Prompts of at least this many tokens prefill through the GEMM (default GEMM_MIN_TOKENS). */
  gemmMinTokens?: number;
  /** The prefill GEMM (default PREFILL_GEMM); tests compare both. */
  prefillGemm?: PrefillGemm;
};

/** How a long call shares the target: awaited between slices (prefill chunks, decode steps); abort stops it there. */
export type CallControl = { signal?: AbortSignal; between?: () => Promise<void> };

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

export { MAX_BATCH };
/** Default rows of one prefill chunk: enough to keep the kernel at its peak, few enough to bound activations. */
export const CHUNK_ROWS = 512;
/** Chunks of at least this many rows yield between layers as well as between chunks (CallControl.between). */
const SLICE_ROWS = 64;
/** Float32 elements of one product's output block: the head is cut into vocabulary blocks beyond it. */
const BLOCK_ELEMENTS = 1 << 24;

/**
 * The prefill GEMM: 'amx', the addon's gemmBf16Parts on AMX's tile unit (BF16 weights where they lie, activations split
 * exactly into three BF16 parts: 1.4–1.8× onnxruntime's float32 MatMul peak here), or 'onnxruntime', its MLAS GEMM on a float32
 * tile widened from each weight. One machine, one value, so the service and its evaluation processes agree: 'amx'
 * where the addon has it, unless IWIBENCH_PREFILL_GEMM says otherwise (read at start, inherited by child processes).
 */
export type PrefillGemm = 'amx' | 'onnxruntime';
export const PREFILL_GEMM: PrefillGemm = prefillGemmFrom(process.env.IWIBENCH_PREFILL_GEMM, kernelInfo().amx === true);

/** The prefill GEMM a setting asks for (unset: the best here); throws if it names none or one not available. */
export function prefillGemmFrom(
  setting: string | undefined,
  amx: boolean,
  name = 'IWIBENCH_PREFILL_GEMM',
): PrefillGemm {
  if (setting === undefined || setting === '') return amx ? 'amx' : 'onnxruntime';
  if (setting !== 'amx' && setting !== 'onnxruntime')
    throw new Error(`${name} must be amx or onnxruntime, got "${setting}"`);
  if (setting === 'amx' && !amx)
    throw new Error(`${name} is amx, but AMX is not available here (kernelInfo().amx is false)`);
  return setting;
}

/**
 * Prompts of at least this many tokens are prefilled through the GEMM, shorter ones in our kernel: about where the
 * two cross on a 1B layer's matrices (docs/engine.md, "Numerics"): 16 tokens on AMX, else 128 with the AVX-512
 * kernel and 64 with AVX2 (and the fallback). One machine, one value, like PREFILL_GEMM.
 */
export const GEMM_MIN_TOKENS = minTokensFor(PREFILL_GEMM);

function minTokensFor(gemm: PrefillGemm): number {
  if (gemm === 'amx') return 16;
  return kernelInfo().vectorBits === 512 ? 128 : 64;
}

/**
 * One chunk of a left-padded batch: T padded times from `start`; positions −1 are padding. `gemm[b]`: sequence b's
 * rows take onnxruntime's GEMM (Gemma3Engine.linear); never in a decode step.
 */
type Chunk = { ids: Int32Array; positions: Int32Array; start: number; T: number; gemm: boolean[] };

/** Which sequences of a call prefill through the GEMM: each by its own length alone, never by the batch's. */
export function gemmSequences(lengths: number[], minTokens = GEMM_MIN_TOKENS): boolean[] {
  return lengths.map((length) => length >= minTokens);
}

type Sessions = {
  positions: ort.InferenceSession;
  /** The prefill GEMM by a decoder matrix's output features N, at gemmThreads(N) threads (one session per count). */
  linear: Map<number, ort.InferenceSession>;
  norm: ort.InferenceSession;
  residualNorm: ort.InferenceSession;
  gatedGelu: ort.InferenceSession;
  attention: Partial<Record<LayerType, ort.InferenceSession>>;
};

export class Gemma3Engine {
  /** head_partial, made on the first inspection. */
  private headPartial: Promise<ort.InferenceSession> | undefined;
  private readonly source: WeightSource;
  /** The device path's projections; undefined on 'cpu' (our kernel and the prefill GEMM). */
  private readonly device: DeviceProjections | undefined;
  private readonly chunkRows: number;
  private readonly gemmMinTokens: number;
  /** Elements of the onnxruntime prefill GEMM's float32 tile: the largest decoder matrix. */
  private readonly tileElements: number;

  private constructor(
    readonly checkpoint: Checkpoint,
    readonly config: Gemma3TextConfig,
    private readonly sessions: Sessions,
    private readonly options: EngineOptions,
    private readonly prefillGemm: PrefillGemm,
  ) {
    this.source = options.source ?? checkpointSource(checkpoint);
    const device = options.device ?? 'cpu';
    this.device =
      device === 'cpu'
        ? undefined
        : new DeviceProjections(device, {
            engineSource: this.source,
            shapeOf: (name) => checkpoint.info(name).shape as [number, number],
            sessionOptions: projectionOptions(graphOptions(options)),
          });
    this.chunkRows = options.chunkRows ?? CHUNK_ROWS;
    this.gemmMinTokens = options.gemmMinTokens ?? minTokensFor(this.prefillGemm);
    this.tileElements = largestMatrix(config);
  }

  /** The device path's sessions made so far by tensor name (undefined on 'cpu'): what went to the device, how often. */
  get deviceUploads(): ReadonlyMap<string, number> | undefined {
    return this.device?.uploads;
  }

  static async create(options: EngineOptions): Promise<Gemma3Engine> {
    checkDevice(options.device);
    await prepareDevice(options.device);
    for (const key of ['chunkRows', 'gemmMinTokens'] as const) {
      const value = options[key];
      if (value !== undefined && !(Number.isInteger(value) && value >= 1))
        throw new Error(`${key} must be a positive integer, got ${value}`);
    }
    const prefillGemm =
      options.prefillGemm === undefined
        ? PREFILL_GEMM
        : prefillGemmFrom(options.prefillGemm, kernelInfo().amx === true, 'prefillGemm');
    const config = options.checkpoint.config;
    const create = (model: Uint8Array) => ort.InferenceSession.create(model, graphOptions(options));
    const attention: Sessions['attention'] = {};
    for (const type of new Set(config.layer_types)) attention[type] = await create(buildAttentionGraph(config, type));
    const sessions: Sessions = {
      positions: await create(buildPositionsGraph(config)),
      linear: new Map(),
      norm: await create(buildNormGraph(config)),
      residualNorm: await create(buildResidualNormGraph(config)),
      gatedGelu: await create(buildGatedGeluGraph(config)),
      attention,
    };
    const byThreads = new Map<number, ort.InferenceSession>();
    const onCpu = (options.device ?? 'cpu') === 'cpu';
    for (const [n] of onCpu && prefillGemm === 'onnxruntime' ? decoderMatrixShapes(config) : []) {
      const threads = gemmThreads(n, options.threads ?? defaultThreads());
      if (!byThreads.has(threads))
        byThreads.set(threads, await ort.InferenceSession.create(buildLinearGraph(), sessionOptions(threads)));
      sessions.linear.set(n, byThreads.get(threads)!);
    }
    return new Gemma3Engine(options.checkpoint, config, sessions, options, prefillGemm);
  }

  /**
   * Greedy decoding of a left-padded batch of ≤ 8 prompts (token ids, e.g. from Tokenizer.chatIds).
   * Each sequence stops at <eos> (1), <end_of_turn> (106) or maxNewTokens; the stop token is not in outputIds.
   */
  async generate(prompts: number[][], options: GenerateOptions): Promise<GenerateResult[]> {
    const { maxNewTokens } = options;
    if (prompts.length === 0 || prompts.length > MAX_BATCH)
      throw new Error(`generate takes 1…${MAX_BATCH} prompts, got ${prompts.length}`);
    if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1)
      throw new Error(`maxNewTokens must be a positive integer, got ${maxNewTokens}`);
    for (const p of prompts) this.checkIds(p);
    try {
      const weights = options.weights ?? this.source;
      const B = prompts.length;
      const T = Math.max(...prompts.map((p) => p.length));
      const pads = prompts.map((p) => T - p.length);
      const cache = new KvCache(this.config, B, T + maxNewTokens);
      const V = this.config.vocab_size;

      // Prefill in chunks of padded time; the last chunk's final rows (time T − 1) give the first logits.
      const perChunk = Math.max(1, Math.floor(this.chunkRows / B));
      const gemm = gemmSequences(
        prompts.map((p) => p.length),
        this.gemmMinTokens,
      );
      let last: Float32Array = new Float32Array(0);
      for (let start = 0; start < T; start += perChunk) {
        await this.between(options);
        const chunk = paddedChunk(prompts, pads, start, Math.min(perChunk, T - start), gemm);
        const { final } = await this.forward(weights, cache, chunk, options);
        if (start + chunk.T === T) last = lastRows(final, B, chunk.T, this.config.hidden_size);
      }
      let logits = await this.headLogits(weights, last, B);

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
        await this.between(options);
        // One decode step for the whole batch; finished sequences ride along and are ignored.
        const positions = Int32Array.from(pads, (pad) => time - pad);
        const { final } = await this.forward(
          weights,
          cache,
          { ids: next, positions, start: time, T: 1, gemm: noGemm },
          options,
        );
        logits = await this.headLogits(weights, final, B);
      }
      return results;
    } finally {
      if (options.weights) await this.device?.endCall(options.weights);
    }
  }

  /** Float32 logits of every position of one sequence, [T, vocab], prefilled in chunks through the KV cache. */
  async logits(
    ids: number[],
    options: CallControl & { chunk?: number; weights?: WeightSource } = {},
  ): Promise<Float32Array> {
    this.checkIds(ids);
    try {
      const weights = options.weights ?? this.source;
      const chunkTokens = options.chunk ?? this.chunkRows;
      const T = ids.length;
      const V = this.config.vocab_size;
      const cache = new KvCache(this.config, 1, T);
      const result = new Float32Array(T * V);
      const gemm = gemmSequences([T], this.gemmMinTokens);
      for (let start = 0; start < T; start += chunkTokens) {
        await this.between(options);
        const chunk = paddedChunk([ids], [0], start, Math.min(chunkTokens, T - start), gemm);
        const { final } = await this.forward(weights, cache, chunk, options);
        result.set(await this.headLogits(weights, final, chunk.T), start * V);
      }
      return result;
    } finally {
      if (options.weights) await this.device?.endCall(options.weights);
    }
  }

  /** Teacher-forced inspection of sequences: next-token log-probabilities, top-k, and residual streams. */
  async inspect(
    requests: InspectRequest[],
    options: CallControl & { layers: number[]; topK: number; weights?: WeightSource },
  ): Promise<InspectResult[]> {
    try {
      const weights = options.weights ?? this.source;
      const layers = [...new Set(options.layers)].sort((a, b) => a - b);
      for (const layer of layers) {
        if (!Number.isInteger(layer) || layer < 0 || layer >= this.config.num_hidden_layers)
          throw new Error(`layer ${layer} is outside 0…${this.config.num_hidden_layers - 1}`);
      }
      if (!Number.isInteger(options.topK) || options.topK < 0 || options.topK > this.config.vocab_size)
        throw new Error(`topK must be an integer in 0…${this.config.vocab_size}`);
      const H = this.config.hidden_size;
      const results: InspectResult[] = [];
      // One sequence at a time: sequences differ in length and inspection is rare, so padding buys nothing.
      for (const request of requests) {
        this.checkIds(request.ids);
        const T = request.ids.length;
        if (!(
          Number.isInteger(request.start) &&
          Number.isInteger(request.end) &&
          0 <= request.start &&
          request.start < request.end &&
          request.end <= T
        )) {
          throw new Error(
            `positions [${request.start}, ${request.end}) are not a non-empty range inside the ${T}-token sequence`,
          );
        }
        const K = request.end - request.start;
        const rows = new Float32Array(K * H); // final-normed hidden states at the inspected positions
        const hidden: Record<number, Float32Array[]> = Object.fromEntries(
          layers.map((layer) => [layer, [] as Float32Array[]]),
        );
        const cache = new KvCache(this.config, 1, request.end);
        const gemm = gemmSequences([request.end], this.gemmMinTokens);
        for (let start = 0; start < request.end; start += this.chunkRows) {
          await this.between(options);
          const chunk = paddedChunk([request.ids], [0], start, Math.min(this.chunkRows, request.end - start), gemm);
          const from = Math.max(request.start, start) - start; // rows of this chunk inside [start, end)
          const to = chunk.T;
          const { final, layerRows } = await this.forward(weights, cache, chunk, options, { layers, from, to });
          if (from < to) rows.set(final.subarray(from * H, to * H), (start + from - request.start) * H);
          for (const layer of layers)
            for (let t = 0; t < to - from; t++) hidden[layer]!.push(layerRows.get(layer)!.slice(t * H, (t + 1) * H));
        }
        const positions = Array.from({ length: K }, (_, k) => request.start + k);
        const targets = positions.map((p) => (p + 1 < T ? request.ids[p + 1]! : 0));
        const head = await this.headLogprobs(weights, rows, targets, options.topK);
        results.push({
          positions,
          nextTokenLogprobs: positions.map((p, i) => (p + 1 < T ? head.target[i]! : NaN)),
          topK: head.top,
          hidden,
        });
      }
      return results;
    } finally {
      if (options.weights) await this.device?.endCall(options.weights);
    }
  }

  async close(): Promise<void> {
    const { positions, linear, norm, residualNorm, gatedGelu, attention } = this.sessions;
    for (const session of [
      positions,
      ...new Set(linear.values()),
      norm,
      residualNorm,
      gatedGelu,
      ...Object.values(attention),
    ])
      await session.release();
    if (this.headPartial) await (await this.headPartial).release();
    this.headPartial = undefined;
    await this.device?.release();
  }

  private checkIds(ids: number[]): void {
    if (ids.length === 0) throw new Error('a sequence needs at least one token');
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.config.vocab_size)
        throw new Error(`token id ${id} is outside the vocabulary 0…${this.config.vocab_size - 1}`);
    }
  }

  private async between(control: CallControl): Promise<void> {
    control.signal?.throwIfAborted();
    await control.between?.();
    control.signal?.throwIfAborted();
  }

  /**
   * One chunk through every decoder layer (Gemma3TextModel): returns the final-normed hidden states [B·T, H] and,
   * for `collect`, the residual stream after the given layers at chunk rows from…to−1 (batch 1).
   */
  private async forward(
    weights: WeightSource,
    cache: KvCache,
    chunk: Chunk,
    control: CallControl,
    collect: { layers: number[]; from: number; to: number } = { layers: [], from: 0, to: 0 },
  ): Promise<{ final: Float32Array; layerRows: Map<number, Float32Array> }> {
    const c = this.config;
    const { hidden_size: H, num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D } = c;
    const B = cache.batch;
    const { T } = chunk;
    const M = B * T;
    /** A norm's scale 1 + w in float32 (Gemma3RMSNorm's `1.0 + weight.float()`). */
    const scale = (name: string) => {
      const w = bf16ToF32(weights.bf16(name));
      for (let i = 0; i < w.length; i++) w[i] = Math.fround(1 + w[i]!);
      return tensor(w, [w.length]);
    };
    const rows = (data: Float32Array, width: number) => tensor(data, [M, width]);
    const layerRows = new Map<number, Float32Array>();

    // Gemma3TextScaledWordEmbedding: embedding rows × √H in float32.
    const embedding = weights.bf16(embedTokensName(c.tensor_prefix));
    const embedScaleValue = embedScale(c);
    let h: Float32Array = new Float32Array(M * H);
    const row = new Float32Array(H);
    for (let i = 0; i < M; i++) {
      const id = chunk.ids[i]!;
      bf16ToF32(embedding.subarray(id * H, (id + 1) * H), row);
      for (let j = 0; j < H; j++) h[i * H + j] = Math.fround(row[j]! * embedScaleValue);
    }
    // RoPE angles and masks, shared by every layer of a type.
    const types = [...new Set(c.layer_types)];
    const positionFeeds: Record<string, ort.Tensor> = {
      rope_positions: tensor(
        Int32Array.from(chunk.positions, (p) => Math.max(p, 0)),
        [B, T],
      ),
      query_positions: tensor(chunk.positions, [B, T]),
    };
    // A call's first chunk finds its cache empty: it attends to its own keys only, and the cache is not scored. On
    // the device path it scores one never-attended slot instead (position −1, zeros; its weight is exp(−∞) = 0):
    // onnxruntime's WebGPU provider crashes on a past of length 0 (measured on Mesa's lavapipe).
    const fresh = chunk.start === 0;
    const neverSlot = fresh && this.device !== undefined;
    for (const type of types) {
      const keys = !fresh
        ? cache.keyPositions(type, chunk.positions, T)
        : neverSlot
          ? withNeverSlot(chunk.positions, B, T)
          : chunk.positions;
      positionFeeds[`key_positions_${type}`] = tensor(keys, [B, keys.length / B]);
    }
    const shared = await this.sessions.positions.run(positionFeeds);

    // The float32 tile onnxruntime's GEMM widens each weight into (the largest decoder matrix), freed after the chunk.
    const tile =
      this.prefillGemm === 'onnxruntime' && chunk.gemm.some(Boolean) ? new Float32Array(this.tileElements) : undefined;
    const first = layerTensorNames(c.tensor_prefix, 0);
    let x = (await this.sessions.norm.run({ x: rows(h, H), scale: scale(first.input_layernorm) })).y!
      .data as Float32Array;
    for (let layer = 0; layer < c.num_hidden_layers; layer++) {
      const n = layerTensorNames(c.tensor_prefix, layer);
      const type = c.layer_types[layer]!;
      const [q, k, v] = await this.linear(weights, tile, [n.q_proj, n.k_proj, n.v_proj], x, M, chunk);
      const slots = neverSlot ? 1 : 0;
      const past = fresh
        ? {
            key: new Float32Array(B * nKV * slots * D),
            value: new Float32Array(B * nKV * slots * D),
            dims: [B, nKV, slots, D],
          }
        : cache.past(layer);
      const attention = await this.sessions.attention[type]!.run({
        q: tensor(q, [B, T, nH * D]),
        k: tensor(k, [B, T, nKV * D]),
        v: tensor(v, [B, T, nKV * D]),
        q_norm: scale(n.q_norm),
        k_norm: scale(n.k_norm),
        cos: shared[`cos_${type}`]!,
        sin: shared[`sin_${type}`]!,
        mask: shared[`mask_${type}`]!,
        past_key: tensor(past.key, past.dims),
        past_value: tensor(past.value, past.dims),
      });
      cache.store(
        layer,
        attention.present_key!.data as Float32Array,
        attention.present_value!.data as Float32Array,
        chunk.start,
        T,
      );
      const [o] = await this.linear(weights, tile, [n.o_proj], attention.context!.data as Float32Array, M, chunk);
      const mid = await this.sessions.residualNorm.run({
        h: rows(h, H),
        a: rows(o, H),
        post: scale(n.post_attention_layernorm),
        next: scale(n.pre_feedforward_layernorm),
      });
      const y = mid.y!.data as Float32Array;
      const I = c.intermediate_size;
      const [gate, up] = await this.linear(weights, tile, [n.gate_proj, n.up_proj], y, M, chunk);
      const z = (await this.sessions.gatedGelu.run({ gate: rows(gate, I), up: rows(up, I) })).z!.data as Float32Array;
      const [down] = await this.linear(weights, tile, [n.down_proj], z, M, chunk);
      const nextNorm =
        layer + 1 < c.num_hidden_layers
          ? layerTensorNames(c.tensor_prefix, layer + 1).input_layernorm
          : finalNormName(c.tensor_prefix);
      const end = await this.sessions.residualNorm.run({
        h: mid.h_out!,
        a: rows(down, H),
        post: scale(n.post_feedforward_layernorm),
        next: scale(nextNorm),
      });
      h = end.h_out!.data as Float32Array;
      x = end.y!.data as Float32Array;
      if (collect.layers.includes(layer)) layerRows.set(layer, h.slice(collect.from * H, collect.to * H));
      // A prefill chunk is seconds of work at 1B: its layers are slices too, so that another call waits for one layer.
      if (M >= SLICE_ROWS && layer + 1 < c.num_hidden_layers) await this.between(control);
    }
    cache.advance(chunk.positions, chunk.start, T);
    return { final: x, layerRows };
  }

  /**
   * y [M, N] = x [M, K] · Wᵀ for each BF16 weight W [N, K] named (Linear weights as stored, of the same input), M = B·T
   * rows, sequence b's rows b·T … b·T + T − 1. Decode steps and short prompts go through our kernel, which reads W's
   * 2 bytes per weight where they lie, all the named weights in one call (a layer's q, k and v; gate and up). Prompts
   * of gemmMinTokens or more (`chunk.gemm`) are compute-bound and take the prefill GEMM: on AMX, all the named
   * weights in one gemmBf16Parts call (2–3× our kernel's rate at 128–512 rows); else each W is widened into `tile` and
   * their rows multiplied in onnxruntime's GEMM, ~1.6× our kernel's rate at 512 rows (docs/benchmarks.md), for few
   * rows widening costs more than it saves. Every path gives a row bitwise the same result whatever rows share the
   * call (MLAS's one-row special case is avoided by padding to two), and the path depends on the sequence's own
   * length, so a batch equals each prompt alone and the service's run_target the evaluator however either batches.
   */
  private async linear(
    weights: WeightSource,
    tile: Float32Array | undefined,
    names: string[],
    x: Float32Array,
    M: number,
    chunk: Chunk,
  ): Promise<Float32Array[]> {
    if (this.device) {
      const outs: Float32Array[] = [];
      for (const name of names) outs.push(await this.device.project(weights, name, x, M));
      return outs;
    }
    const shapes = names.map((name) => this.checkpoint.info(name).shape as [number, number]);
    const K = shapes[0]![1];
    const inOneCall = (product: typeof matmulBf16Parts) => (rows: Float32Array) => {
      const count = rows.length / K;
      const outs = shapes.map(([N]) => new Float32Array(count * N));
      product(
        rows,
        names.map((name) => weights.bf16(name)),
        outs,
        count,
        K,
      );
      return outs;
    };
    const kernel = inOneCall(matmulBf16Parts);
    const onnxGemm = async (rows: Float32Array) => {
      const count = rows.length / K;
      const input = count > 1 ? rows : Float32Array.from({ length: 2 * K }, (_, i) => rows[i % K]!);
      const outs: Float32Array[] = [];
      for (const [p, [N]] of shapes.entries()) {
        const w = tile!.subarray(0, N * K);
        widenBf16(weights.bf16(names[p]!), w);
        const { y } = await this.sessions.linear
          .get(N)!
          .run({ x: tensor(input, [input.length / K, K]), w: tensor(w, [N, K]) });
        outs.push((y!.data as Float32Array).subarray(0, count * N));
      }
      return outs;
    };
    const gemm = this.prefillGemm === 'amx' ? inOneCall(gemmBf16Parts) : onnxGemm;
    const gemmCount = chunk.gemm.filter(Boolean).length;
    if (gemmCount === 0) return kernel(x);
    if (gemmCount === chunk.gemm.length) return gemm(x);
    const byKernel = kernel(gatherSequences(x, chunk, K, false));
    const byGemm = await gemm(gatherSequences(x, chunk, K, true));
    return shapes.map(([N], p) => {
      const out = new Float32Array(M * N);
      scatterSequences(byKernel[p]!, out, chunk, N, false);
      scatterSequences(byGemm[p]!, out, chunk, N, true);
      return out;
    });
  }

  /** Logits [R, vocab] of final-normed rows through the tied head. */
  private headLogits(weights: WeightSource, rows: Float32Array, R: number): Promise<Float32Array> {
    return this.headBlock(weights, rows, R, 0, this.config.vocab_size);
  }

  /** Logits [R, n] of the vocabulary block n0…n0 + n − 1 for final-normed rows (the tied head's rows of it). */
  private async headBlock(weights: WeightSource, rows: Float32Array, R: number, n0: number, n: number) {
    const name = embedTokensName(this.config.tensor_prefix);
    if (this.device) return this.device.project(weights, name, rows, R, { start: n0, count: n });
    const H = this.config.hidden_size;
    const out = new Float32Array(R * n);
    matmulBf16(rows, weights.bf16(name).subarray(n0 * H, (n0 + n) * H), out, R, n, H);
    return out;
  }

  /**
   * Log-probabilities of `targets` and the top-k next tokens of final-normed rows, merged over vocabulary blocks
   * (log-sum-exp and top-k per block in onnxruntime, combined here in float64), so [rows, vocab] is never held.
   */
  private async headLogprobs(
    weights: WeightSource,
    rows: Float32Array,
    targets: number[],
    topK: number,
  ): Promise<{ target: number[]; top: { ids: number[]; logprobs: number[] }[] }> {
    const V = this.config.vocab_size;
    const R = targets.length;
    this.headPartial ??= ort.InferenceSession.create(buildHeadPartialGraph(), graphOptions(this.options));
    const session = await this.headPartial;
    const max = new Float64Array(R).fill(-Infinity);
    const sum = new Float64Array(R);
    const targetLogit = new Float64Array(R);
    const candidates: { id: number; logit: number }[][] = Array.from({ length: R }, () => []);
    const perBlock = Math.max(1, Math.min(V, Math.floor(BLOCK_ELEMENTS / R)));
    for (let n0 = 0; n0 < V; n0 += perBlock) {
      const n = Math.min(perBlock, V - n0);
      const block = await this.headBlock(weights, rows, R, n0, n);
      const k = Math.min(Math.max(topK, 1), n);
      const target = Int32Array.from(targets, (id) => Math.min(Math.max(id - n0, 0), n - 1));
      const out = await session.run({
        logits: tensor(block, [R, n]),
        target: tensor(target, [R]),
        k: new ort.Tensor('int64', BigInt64Array.of(BigInt(k)), [1]),
      });
      const [bMax, bSum, bTarget] = [out.max!.data, out.sum_exp!.data, out.target_logit!.data] as Float32Array[];
      const [topValues, topIds] = [out.top_values!.data as Float32Array, out.top_ids!.data as BigInt64Array];
      for (let r = 0; r < R; r++) {
        const m = Math.max(max[r]!, bMax![r]!);
        sum[r] = sum[r]! * Math.exp(max[r]! - m) + bSum![r]! * Math.exp(bMax![r]! - m);
        max[r] = m;
        if (targets[r]! >= n0 && targets[r]! < n0 + n) targetLogit[r] = bTarget![r]!;
        const list = candidates[r]!;
        for (let j = 0; j < k; j++) list.push({ id: n0 + Number(topIds[r * k + j]!), logit: topValues[r * k + j]! });
        list.sort((a, b) => b.logit - a.logit || a.id - b.id);
        list.length = Math.min(list.length, topK);
      }
    }
    const logSumExp = Array.from(max, (m, r) => m + Math.log(sum[r]!));
    return {
      target: Array.from(targetLogit, (logit, r) => Math.fround(logit - logSumExp[r]!)),
      top: candidates.map((list, r) => ({
        ids: list.map((c) => c.id),
        logprobs: list.map((c) => Math.fround(c.logit - logSumExp[r]!)),
      })),
    };
  }
}

/** [N, K] of the decoder matrices (q, k, v, o, gate, up, down: every layer's are layer 0's), as names.ts has them. */
function decoderMatrixShapes(config: Gemma3TextConfig): [number, number][] {
  const shapes = expectedTextTensors(config);
  const n = layerTensorNames(config.tensor_prefix, 0);
  const names = [n.q_proj, n.k_proj, n.v_proj, n.o_proj, n.gate_proj, n.up_proj, n.down_proj];
  return names.map((name) => shapes.get(name) as [number, number]);
}

/** Elements of the largest decoder matrix (the size of prefill's float32 tile). */
function largestMatrix(config: Gemma3TextConfig): number {
  return Math.max(...decoderMatrixShapes(config).map(([n, k]) => n * k));
}

/**
 * Threads for the prefill GEMM of an [N, K] weight: the most, up to `threads`, with which no split of N among them
 * (slices of ⌈N / t⌉ rounded up to 16 columns, and the rest) leaves a thread 64 columns or fewer. MLAS lengthens its
 * K blocks for such narrow slices (sgemm.cpp: "expand the K stride if N is small"), and which split it takes depends
 * on M, so a row's sum would depend on how many rows share the call (test/engine/runtime.test.ts).
 */
export function gemmThreads(n: number, threads: number): number {
  let safe = 1;
  for (let t = 2; t <= threads; t++) {
    const stride = Math.ceil(Math.ceil(n / t) / 16) * 16;
    const last = n - (Math.ceil(n / stride) - 1) * stride;
    if (stride <= 64 || last <= 64) break;
    safe = t;
  }
  return safe;
}

/** Bytes of the weights an engine holds: every text tensor in BF16. */
export function textWeightBytes(config: Gemma3TextConfig): number {
  let params = 0;
  for (const shape of expectedTextTensors(config).values()) params += shape.reduce((a, b) => a * b, 1);
  return 2 * params;
}

/**
 * The most memory one call adds (README, "Memory"): its KV cache, one chunk's activations (the projections' inputs
 * and outputs, attention scores, masks and probabilities over the cache), the prefill GEMM's scratch and one head block.
 */
export function callMemoryBytes(
  config: Gemma3TextConfig,
  call: { batch: number; tokens: number; chunkRows?: number },
): { cache: number; chunk: number; total: number } {
  const {
    hidden_size: H,
    intermediate_size: I,
    num_attention_heads: nH,
    num_key_value_heads: nKV,
    head_dim: D,
  } = config;
  const { batch: B, tokens } = call;
  const perChunk = Math.max(1, Math.floor((call.chunkRows ?? CHUNK_ROWS) / B));
  const T = Math.min(perChunk, tokens);
  const M = B * T;
  const slots = (type: LayerType) => (type === 'full_attention' ? tokens : Math.min(tokens, config.sliding_window));
  const cache = config.layer_types.reduce((sum, type) => sum + 2 * 4 * B * nKV * slots(type) * D, 0);
  const S = tokens + T; // the widest key range: a full layer's cache and the chunk
  const rows = 4 * M * (10 * H + 4 * nH * D + 6 * nKV * D + 3 * I); // JS and graph tensors of one layer
  // Scores of the cache and of the chunk, joined, masked, softmax and its two parts; the masks of both layer types.
  const attention = 4 * B * nH * T * S * 7;
  const head = 4 * BLOCK_ELEMENTS * 2; // one head block and the exp of it in head_partial
  // The prefill GEMM's scratch, either one's: onnxruntime's float32 weight tile, or AMX's three BF16 parts of the
  // widest input, in superblocks of 32 rows × 6 tiles of 1 KiB per 32 columns (engine/native/kernels.cc, gemm).
  const amxParts = Math.ceil(M / 32) * 6 * Math.ceil(Math.max(H, I, nH * D) / 32) * 1024;
  const gemm = Math.max(4 * largestMatrix(config), amxParts);
  const chunk = rows + attention + head + gemm;
  return { cache, chunk, total: cache + chunk };
}

/** Options of the graphs between the projections: on the CPU, or on the device's provider. */
function graphOptions(options: EngineOptions): ort.InferenceSession.SessionOptions {
  const cpu = sessionOptions(options.threads);
  const device = options.device ?? 'cpu';
  return device === 'cpu' ? cpu : DeviceProjections.sessionOptions(device, cpu);
}

/** A projection session's: constant folding off, so that a BF16 weight's Cast is not folded into a float32 copy. */
function projectionOptions(graph: ort.InferenceSession.SessionOptions): ort.InferenceSession.SessionOptions {
  return { ...graph, extra: { ...graph.extra, optimization: { disable_specified_optimizers: 'ConstantFolding' } } };
}

function sessionOptions(threads?: number): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads ?? defaultThreads(),
    // No arena: a call's activations go back to the system when it ends, instead of staying reserved at its peak.
    enableCpuMemArena: false,
    // Idle onnxruntime threads must not spin while our kernel runs on the same cores.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
}

function tensor(data: Float32Array | Int32Array, dims: number[]): ort.Tensor {
  return new ort.Tensor(data instanceof Float32Array ? 'float32' : 'int32', data, dims);
}

/** T padded times from `start` of a left-padded batch: ids (PAD_ID in padding) and positions (−1 in padding). */
function paddedChunk(prompts: number[][], pads: number[], start: number, T: number, gemm: boolean[]): Chunk {
  const B = prompts.length;
  const ids = new Int32Array(B * T);
  const positions = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const real = start + t - pads[b]!;
      ids[b * T + t] = real >= 0 ? prompts[b]![real]! : PAD_ID;
      positions[b * T + t] = real >= 0 ? real : -1;
    }
  }
  return { ids, positions, start, T, gemm };
}

/** Key positions [B, 1 + T]: a never-attended slot (−1), then each sequence's chunk positions. */
function withNeverSlot(positions: Int32Array, B: number, T: number): Int32Array {
  const out = new Int32Array(B * (1 + T));
  for (let b = 0; b < B; b++) {
    out[b * (1 + T)] = -1;
    out.set(positions.subarray(b * T, (b + 1) * T), b * (1 + T) + 1);
  }
  return out;
}

/** The rows [b·T, (b + 1)·T) of the sequences b with chunk.gemm[b] === gemm, back to back. */
function gatherSequences(x: Float32Array, chunk: Chunk, width: number, gemm: boolean): Float32Array {
  const block = chunk.T * width;
  const picked = chunk.gemm.flatMap((g, b) => (g === gemm ? [b] : []));
  const out = new Float32Array(picked.length * block);
  picked.forEach((b, i) => out.set(x.subarray(b * block, (b + 1) * block), i * block));
  return out;
}

/** The inverse of gatherSequences: rows of the picked sequences back to their places in `out`. */
function scatterSequences(rows: Float32Array, out: Float32Array, chunk: Chunk, width: number, gemm: boolean): void {
  const block = chunk.T * width;
  chunk.gemm
    .flatMap((g, b) => (g === gemm ? [b] : []))
    .forEach((b, i) => out.set(rows.subarray(i * block, (i + 1) * block), b * block));
}

/** The rows of the last time of each sequence in a [B·T, H] block. */
function lastRows(block: Float32Array, B: number, T: number, H: number): Float32Array {
  const out = new Float32Array(B * H);
  for (let b = 0; b < B; b++) out.set(block.subarray(((b + 1) * T - 1) * H, (b + 1) * T * H), b * H);
  return out;
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
