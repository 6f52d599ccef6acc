// The tied head (Gemma3ForCausalLM's lm_head, the embedding matrix): logits of final-normed rows, and the
// log-probabilities and top-k an inspection asks for, computed a vocabulary block at a time so that [rows, vocab]
// is never held for many rows.
import { vocabPartials } from './kernels.ts';
import type { CallBuffers } from './call-buffers.ts';
import type { Gemma3TextConfig } from './config.ts';
import type { Projector } from './projector.ts';
import type { WeightSource } from './weight-source.ts';

/** Float32 elements of one product's output block: the head is cut into vocabulary blocks beyond it. */
export const BLOCK_ELEMENTS = 1 << 24;

/**
 * Vocabulary columns of one chunk of the log-softmax's sums (engine/native/vocab.h). Chunks start at multiples of it
 * and blocks hold whole chunks, so a row's log-probabilities are the same bits whatever rows are inspected with it.
 */
export const VOCAB_CHUNK = 4096;

/** The most top-k entries an inspection keeps per position (kept by insertion, so k stays small; the API's is 20). */
export const MAX_TOP_K = 256;

export type HeadLogprobs = { target: number[]; top: { ids: number[]; logprobs: number[] }[] };

/**
 * log-softmax of rows over the whole vocabulary, fed a block of columns at a time in ascending order: per chunk its
 * maximum and Σ e^(x − max) in float32 (the kernels, the same bits on every path), then per row
 * log Σ e = M + ln Σ_c sum_c · e^(max_c − M) in float64 over the chunks in order (M the largest max_c).
 */
export class LogSoftmax {
  private readonly chunks: number;
  private readonly chunkMax: Float32Array;
  private readonly chunkSum: Float32Array;
  private readonly top: Float32Array;
  private readonly ids: Int32Array;

  constructor(
    readonly rows: number,
    vocab: number,
    readonly k: number,
  ) {
    this.chunks = Math.ceil(vocab / VOCAB_CHUNK);
    this.chunkMax = new Float32Array(rows * this.chunks);
    this.chunkSum = new Float32Array(rows * this.chunks);
    this.top = new Float32Array(rows * k).fill(-Infinity);
    this.ids = new Int32Array(rows * k).fill(-1);
  }

  /** Columns n0 … n0 + n of every row (block [rows × n]); n0 a multiple of VOCAB_CHUNK, n whole chunks but the last. */
  add(block: Float32Array, n0: number, n: number): void {
    const { rows, chunks } = this;
    const c0 = n0 / VOCAB_CHUNK;
    const width = Math.ceil(n / VOCAB_CHUNK);
    const max = new Float32Array(rows * width);
    const sum = new Float32Array(rows * width);
    vocabPartials(block, n, VOCAB_CHUNK, max, sum, this.top, this.ids, n0);
    for (let r = 0; r < rows; r++) {
      this.chunkMax.set(max.subarray(r * width, (r + 1) * width), r * chunks + c0);
      this.chunkSum.set(sum.subarray(r * width, (r + 1) * width), r * chunks + c0);
    }
  }

  /** log Σ_v e^(logit_v) of row r, once every column has been added. */
  logSumExp(r: number): number {
    const max = this.chunkMax.subarray(r * this.chunks, (r + 1) * this.chunks);
    const sum = this.chunkSum.subarray(r * this.chunks, (r + 1) * this.chunks);
    let M = -Infinity;
    for (const m of max) if (m > M) M = m;
    let total = 0;
    for (let c = 0; c < this.chunks; c++) total += sum[c]! * Math.exp(max[c]! - M);
    return M + Math.log(total);
  }

  /** Row r's k largest logits (fewer if fewer exceed −∞), largest first, an equal value after the lower id. */
  topOf(r: number): { ids: number[]; values: number[] } {
    const ids: number[] = [];
    const values: number[] = [];
    for (let j = r * this.k; j < (r + 1) * this.k && this.ids[j]! >= 0; j++) {
      ids.push(this.ids[j]!);
      values.push(this.top[j]!);
    }
    return { ids, values };
  }
}

export class TiedHead {
  constructor(
    private readonly config: Gemma3TextConfig,
    private readonly projector: Projector,
  ) {}

  /** Logits [R, vocab] of final-normed rows [R, H], in the call's buffers: valid until its next head. */
  logits(weights: WeightSource, rows: Float32Array, R: number, buffers: CallBuffers): Promise<Float32Array> {
    return this.projector.head(weights, rows, R, 0, this.config.vocab_size, buffers);
  }

  /** Log-probabilities of `targets` and the top-k next tokens of final-normed rows, a block of whole chunks at a time. */
  async logprobs(
    weights: WeightSource,
    rows: Float32Array,
    targets: number[],
    topK: number,
    buffers: CallBuffers,
  ): Promise<HeadLogprobs> {
    const V = this.config.vocab_size;
    const R = targets.length;
    const softmax = new LogSoftmax(R, V, topK);
    const targetLogit = new Float64Array(R);
    const perBlock = VOCAB_CHUNK * Math.max(1, Math.floor(BLOCK_ELEMENTS / (R * VOCAB_CHUNK)));
    for (let n0 = 0; n0 < V; n0 += perBlock) {
      const n = Math.min(perBlock, V - n0);
      const block = await this.projector.head(weights, rows, R, n0, n, buffers);
      softmax.add(block, n0, n);
      for (let r = 0; r < R; r++)
        if (targets[r]! >= n0 && targets[r]! < n0 + n) targetLogit[r] = block[r * n + targets[r]! - n0]!;
    }
    const target: number[] = [];
    const top: HeadLogprobs['top'] = [];
    for (let r = 0; r < R; r++) {
      const lse = softmax.logSumExp(r);
      const best = softmax.topOf(r);
      target.push(Math.fround(targetLogit[r]! - lse));
      top.push({ ids: best.ids, logprobs: best.values.map((v) => Math.fround(v - lse)) });
    }
    return { target, top };
  }
}
