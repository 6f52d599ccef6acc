// Gemma 3 text runtime: greedy generation, teacher-forced inspection and full-sequence logits, with the weights held
// as BF16 (2 bytes per parameter, exactly the checkpoint's values or an episode's edits) and read where they lie.
//
// The parts, each in a file of its own: settings.ts (resolved once, here in create), the projector that runs every
// weight product (cpu-projector.ts or device.ts, chosen once), graphs.ts (the onnxruntime graphs between them),
// text-model.ts and decoder-layer.ts (the forward pass, as Hugging Face's Gemma3TextModel and Gemma3DecoderLayer),
// head.ts (the tied head), generate.ts (the decode loop), kv-cache.ts and memory.ts. Every projection path gives a row
// bitwise the same result whatever rows share the call, and the path depends on the sequence's own length, so a batch
// gives bitwise what each prompt gives alone, and the service's run_target what the evaluator sees. Prompts are
// prefilled in chunks through the KV cache, so no call holds more than its cache and one chunk's activations.
import { IwiError } from '../core/errors.ts';
import { MAX_BATCH } from './batch.ts';
import { CallBuffers } from './call-buffers.ts';
import type { Checkpoint } from './checkpoint.ts';
import { paddedChunk } from './chunk.ts';
import type { Gemma3TextConfig } from './config.ts';
import { between, type CallControl } from './control.ts';
import { CpuProjector } from './cpu-projector.ts';
import { DeviceProjections, prepareDevice } from './device.ts';
import { PROBE_MAX_STEPS, PROBE_SECONDS, probeSpeedCurve, type SpeedPoint } from './batch-limit.ts';
import {
  decodeSpeed,
  greedyGenerate,
  type GenerateHooks,
  type GenerateOptions,
  type GenerateResult,
  type GenerateSequence,
} from './generate.ts';
import { Graphs, graphSessionOptions } from './graphs.ts';
import { MAX_TOP_K, TiedHead } from './head.ts';
import { KvCache } from './kv-cache.ts';
import { embedTokensName, expectedTextTensors } from './names.ts';
import type { Projector } from './projector.ts';
import { RoundingProjector } from './rounding-projector.ts';
import { resolveSettings, type EngineOptionsSettings, type EngineSettings } from './settings.ts';
import { cachedSpeedCurve, speedKey } from './speed-cache.ts';
import { Gemma3TextModel } from './text-model.ts';
import { checkpointSource, type WeightSource } from './weight-source.ts';

export type EngineOptions = EngineOptionsSettings & {
  checkpoint: Checkpoint;
  /** BF16 weights for runs that name none (default: read from the checkpoint once, on first use). */
  source?: WeightSource;
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

export class Gemma3Engine {
  private constructor(
    readonly checkpoint: Checkpoint,
    readonly settings: EngineSettings,
    private readonly source: WeightSource,
    private readonly graphs: Graphs,
    private readonly projector: Projector,
    /** The device's projections (undefined on 'cpu'), for what they uploaded. */
    private readonly deviceProjections: DeviceProjections | undefined,
    private readonly model: Gemma3TextModel,
    private readonly head: TiedHead,
  ) {}

  get config(): Gemma3TextConfig {
    return this.checkpoint.config;
  }

  /** The device path's sessions made so far by tensor name (undefined on 'cpu'): what went to the device, how often. */
  get deviceUploads(): ReadonlyMap<string, number> | undefined {
    return this.deviceProjections?.uploads;
  }

  static async create(options: EngineOptions): Promise<Gemma3Engine> {
    const settings = resolveSettings(options);
    await prepareDevice(settings.device);
    const { checkpoint } = options;
    const source = options.source ?? checkpointSource(checkpoint);
    const graphs = await Graphs.create(checkpoint.config, settings);
    const device =
      settings.device === 'cpu'
        ? undefined
        : new DeviceProjections(settings.device, {
            engineSource: source,
            headName: embedTokensName(checkpoint.config.tensor_prefix),
            shapeOf: (name) => checkpoint.info(name).shape as [number, number],
            sessionOptions: DeviceProjections.projectionOptions(graphSessionOptions(settings)),
          });
    const products: Projector = device ?? (await CpuProjector.create(checkpoint, settings));
    const rounds = settings.precision === 'bf16' && !products.roundsToBf16;
    const projector = rounds ? new RoundingProjector(products) : products;
    const model = new Gemma3TextModel(checkpoint.config, graphs, projector, {
      pointwise: settings.device === 'cpu' ? 'kernel' : 'graph',
      precision: settings.precision,
    });
    const head = new TiedHead(checkpoint.config, projector);
    return new Gemma3Engine(checkpoint, settings, source, graphs, projector, device, model, head);
  }

  /**
   * Greedy decoding of ≤ MAX_BATCH prompts (token ids, e.g. from Tokenizer.chatIds), all in flight at once.
   * Each sequence stops at <eos> (1), <end_of_turn> (106) or maxNewTokens; the stop token is not in outputIds.
   */
  async generate(prompts: number[][], options: GenerateOptions): Promise<GenerateResult[]> {
    if (prompts.length === 0 || prompts.length > MAX_BATCH)
      throw invalid(`generate takes 1…${MAX_BATCH} prompts, got ${prompts.length}`);
    const { maxNewTokens } = options;
    return this.generateMany(
      prompts.map((ids) => ({ ids, maxNewTokens })),
      { ...options, maxBatch: prompts.length },
    );
  }

  /**
   * Continuous batching: any number of sequences, each with its own cap, at most `maxBatch` in flight; a row that
   * stops is given to the next waiting sequence. Every sequence's outputs are bitwise what it gives alone.
   */
  async generateMany(
    sequences: GenerateSequence[],
    options: GenerateHooks & { maxBatch: number },
  ): Promise<GenerateResult[]> {
    if (sequences.length === 0) throw invalid('generateMany takes at least one sequence');
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1)
      throw invalid(`maxBatch must be a positive integer, got ${options.maxBatch}`);
    for (const { ids, maxNewTokens } of sequences) {
      if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1)
        throw invalid(`maxNewTokens must be a positive integer, got ${maxNewTokens}`);
      this.checkIds(ids);
    }
    return this.call(options.weights, (weights) =>
      greedyGenerate(
        { model: this.model, head: this.head, settings: this.settings },
        weights,
        sequences,
        options.maxBatch,
        options,
      ),
    );
  }

  /**
   * The speed curve of continuous batching on this machine: generated tokens per second at PROBE_ROWS rows in order,
   * while `maxRows` allows and the speed has not clearly fallen (PROBE_SECONDS of decode steps each; batch-limit.ts).
   */
  async speedCurve(options: { maxRows: number }): Promise<SpeedPoint[]> {
    checkMaxRows(options.maxRows);
    const timing = { seconds: PROBE_SECONDS, maxSteps: PROBE_MAX_STEPS };
    const parts = { model: this.model, head: this.head, settings: this.settings };
    return probeSpeedCurve((rows) => decodeSpeed(parts, this.source, rows, timing), options.maxRows);
  }

  /**
   * speedCurve's, kept per machine and model shape (speed-cache.ts): measured by the first process on this machine,
   * read by every later one (`cached`), measured again where this one may hold more rows than it was measured for.
   */
  keptSpeedCurve(options: { maxRows: number }): Promise<{ curve: SpeedPoint[]; cached: boolean }> {
    checkMaxRows(options.maxRows);
    const probe = (maxRows: number) => this.speedCurve({ maxRows });
    return cachedSpeedCurve(speedKey(this.config, this.settings), options.maxRows, probe);
  }

  /** Float32 logits of every position of one sequence, [T, vocab], prefilled in chunks through the KV cache. */
  async logits(
    ids: number[],
    options: CallControl & { chunk?: number; weights?: WeightSource } = {},
  ): Promise<Float32Array> {
    this.checkIds(ids);
    return this.call(options.weights, async (weights) => {
      const chunkTokens = options.chunk ?? this.settings.chunkRows;
      const T = ids.length;
      const V = this.config.vocab_size;
      const cache = new KvCache(this.config, 1, T);
      const buffers = new CallBuffers();
      const result = new Float32Array(T * V);
      for (let start = 0; start < T; start += chunkTokens) {
        await between(options);
        const chunk = paddedChunk([ids], [0], start, Math.min(chunkTokens, T - start));
        const { final } = await this.model.forward(weights, cache, chunk, options, buffers);
        result.set(await this.head.logits(weights, final, chunk.T, buffers), start * V);
      }
      return result;
    });
  }

  /** Teacher-forced inspection of sequences: next-token log-probabilities, top-k, and residual streams. */
  async inspect(
    requests: InspectRequest[],
    options: CallControl & { layers: number[]; topK: number; weights?: WeightSource },
  ): Promise<InspectResult[]> {
    const layers = [...new Set(options.layers)].sort((a, b) => a - b);
    for (const layer of layers) {
      if (!Number.isInteger(layer) || layer < 0 || layer >= this.config.num_hidden_layers)
        throw invalid(`layer ${layer} is outside 0…${this.config.num_hidden_layers - 1}`);
    }
    if (!Number.isInteger(options.topK) || options.topK < 0 || options.topK > MAX_TOP_K)
      throw invalid(`topK must be an integer in 0…${MAX_TOP_K}`);
    for (const { ids, start, end } of requests) {
      this.checkIds(ids);
      if (!(Number.isInteger(start) && Number.isInteger(end) && 0 <= start && start < end && end <= ids.length))
        throw invalid(`positions [${start}, ${end}) are not a non-empty range inside the ${ids.length}-token sequence`);
    }
    return this.call(options.weights, async (weights) => {
      const results: InspectResult[] = [];
      // One sequence at a time: sequences differ in length and inspection is rare, so padding buys nothing.
      for (const request of requests) results.push(await this.inspectOne(weights, request, layers, options));
      return results;
    });
  }

  /**
   * Reads every text weight of the engine's own source now, not on the first forward pass that multiplies it: a fresh
   * evaluation process uses them all, and its loading then counts as loading, not as its first prefill's time.
   */
  loadWeights(): void {
    for (const name of expectedTextTensors(this.config).keys()) this.source.bf16(name);
  }

  async close(): Promise<void> {
    await this.graphs.release();
    await this.projector.release();
  }

  private async inspectOne(
    weights: WeightSource,
    request: InspectRequest,
    layers: number[],
    options: CallControl & { topK: number },
  ): Promise<InspectResult> {
    const H = this.config.hidden_size;
    const chunkRows = this.settings.chunkRows;
    const T = request.ids.length;
    const K = request.end - request.start;
    const rows = new Float32Array(K * H); // final-normed hidden states at the inspected positions
    const hidden: Record<number, Float32Array[]> = Object.fromEntries(layers.map((layer) => [layer, []]));
    const cache = new KvCache(this.config, 1, request.end);
    const buffers = new CallBuffers();
    for (let start = 0; start < request.end; start += chunkRows) {
      await between(options);
      const chunk = paddedChunk([request.ids], [0], start, Math.min(chunkRows, request.end - start));
      const from = Math.max(request.start, start) - start; // rows of this chunk inside [start, end)
      const to = chunk.T;
      const { final, layerRows } = await this.model.forward(weights, cache, chunk, options, buffers, {
        layers,
        from,
        to,
      });
      if (from < to) rows.set(final.subarray(from * H, to * H), (start + from - request.start) * H);
      for (const layer of layers)
        for (let t = 0; t < to - from; t++) hidden[layer]!.push(layerRows.get(layer)!.slice(t * H, (t + 1) * H));
    }
    const positions = Array.from({ length: K }, (_, k) => request.start + k);
    const targets = positions.map((p) => (p + 1 < T ? request.ids[p + 1]! : 0));
    const head = await this.head.logprobs(weights, rows, targets, options.topK, buffers);
    return {
      positions,
      nextTokenLogprobs: positions.map((p, i) => (p + 1 < T ? head.target[i]! : NaN)),
      topK: head.top,
      hidden,
    };
  }

  /** Runs one call on its weights (default: the engine's source); what the projector made for them goes after. */
  private async call<T>(given: WeightSource | undefined, run: (weights: WeightSource) => Promise<T>): Promise<T> {
    try {
      return await run(given ?? this.source);
    } finally {
      if (given) await this.projector.endCall(given);
    }
  }

  private checkIds(ids: number[]): void {
    if (ids.length === 0) throw invalid('a sequence needs at least one token');
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.config.vocab_size)
        throw invalid(`token id ${id} is outside the vocabulary 0…${this.config.vocab_size - 1}`);
    }
  }
}

function checkMaxRows(maxRows: number): void {
  if (!Number.isInteger(maxRows) || maxRows < 1) throw invalid(`maxRows must be a positive integer, got ${maxRows}`);
}

function invalid(message: string): IwiError {
  return new IwiError('ENGINE_INPUT_INVALID', message);
}
