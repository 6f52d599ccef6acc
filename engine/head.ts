// The tied head (Gemma3ForCausalLM's lm_head, the embedding matrix): logits of final-normed rows, and the
// log-probabilities and top-k an inspection asks for, computed a vocabulary block at a time so that [rows, vocab]
// is never held for many rows.
import * as ort from 'onnxruntime-node';
import type { CallBuffers } from './call-buffers.ts';
import type { Gemma3TextConfig } from './config.ts';
import { tensor, type Graphs } from './graphs.ts';
import type { Projector } from './projector.ts';
import type { WeightSource } from './weight-source.ts';

/** Float32 elements of one product's output block: the head is cut into vocabulary blocks beyond it. */
export const BLOCK_ELEMENTS = 1 << 24;

export type HeadLogprobs = { target: number[]; top: { ids: number[]; logprobs: number[] }[] };

export class TiedHead {
  constructor(
    private readonly config: Gemma3TextConfig,
    private readonly projector: Projector,
    private readonly graphs: Graphs,
  ) {}

  /** Logits [R, vocab] of final-normed rows [R, H], in the call's buffers: valid until its next head. */
  logits(weights: WeightSource, rows: Float32Array, R: number, buffers: CallBuffers): Promise<Float32Array> {
    return this.projector.head(weights, rows, R, 0, this.config.vocab_size, buffers);
  }

  /**
   * Log-probabilities of `targets` and the top-k next tokens of final-normed rows, merged over vocabulary blocks
   * (log-sum-exp and top-k per block in onnxruntime, combined here in float64).
   */
  async logprobs(
    weights: WeightSource,
    rows: Float32Array,
    targets: number[],
    topK: number,
    buffers: CallBuffers,
  ): Promise<HeadLogprobs> {
    const V = this.config.vocab_size;
    const R = targets.length;
    const session = await this.graphs.headPartial();
    const max = new Float64Array(R).fill(-Infinity);
    const sum = new Float64Array(R);
    const targetLogit = new Float64Array(R);
    const candidates: { id: number; logit: number }[][] = Array.from({ length: R }, () => []);
    const perBlock = Math.max(1, Math.min(V, Math.floor(BLOCK_ELEMENTS / R)));
    for (let n0 = 0; n0 < V; n0 += perBlock) {
      const n = Math.min(perBlock, V - n0);
      const block = await this.projector.head(weights, rows, R, n0, n, buffers);
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
