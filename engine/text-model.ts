// Gemma 3's text decoder over one chunk (Hugging Face's Gemma3TextModel.forward): the scaled embedding, the RoPE
// tables and masks of each layer type, every decoder layer (decoder-layer.ts) and the final norm. A chunk is part of
// a left-padded batch; the KV cache carries what earlier chunks and decode steps left. Continuous batching
// (forwardRows) runs sequences that each keep a cache of their own in one pass: projections and norms for all their
// rows at once, attention per sequence (a decode step's in one attendDecode call over every row's own cache).
import type * as ort from 'onnxruntime-node';
import { bf16ToF32, roundToBf16 } from './bf16.ts';
import type { CallBuffers } from './call-buffers.ts';
import { withNeverSlot, type Chunk } from './chunk.ts';
import type { Gemma3TextConfig } from './config.ts';
import { between, type CallControl } from './control.ts';
import {
  decoderLayer,
  type AttentionGroup,
  type DecodeRows,
  type LayerContext,
  type Pointwise,
  type Residual,
} from './decoder-layer.ts';
import { embedScale } from './gemma3-graph.ts';
import { tensor, type Graphs } from './graphs.ts';
import type { KvCache } from './kv-cache.ts';
import { embedTokensName, layerTensorNames } from './names.ts';
import { rmsNorm, roundBf16 } from './kernels.ts';
import { RopeTables } from './rope.ts';
import type { Projector } from './projector.ts';
import type { Precision } from './settings.ts';
import type { WeightSource } from './weight-source.ts';

/** Chunks of at least this many rows yield between layers as well as between chunks (CallControl.between). */
const SLICE_ROWS = 64;

/** Residual streams to keep: after each layer of `layers`, the chunk's rows from … to − 1 (batch 1). */
export type Collect = { layers: number[]; from: number; to: number };

export class Gemma3TextModel {
  /** RoPE's tables on the CPU path (the positions graph's on a device). */
  private readonly rope: RopeTables;

  constructor(
    readonly config: Gemma3TextConfig,
    private readonly graphs: Graphs,
    private readonly projector: Projector,
    private readonly arithmetic: { pointwise: Pointwise; precision: Precision },
  ) {
    this.rope = new RopeTables(config);
  }

  /**
   * The final-normed hidden states [B·T, H] of a chunk and, for `collect`, the residual streams it asks for. The
   * call's `buffers` hold its products between passes (call-buffers.ts); the final states may lie there too, valid
   * until the call's next pass.
   */
  forward(
    weights: WeightSource,
    cache: KvCache,
    chunk: Chunk,
    control: CallControl,
    buffers: CallBuffers,
    collect: Collect = { layers: [], from: 0, to: 0 },
  ): Promise<{ final: Float32Array; layerRows: Map<number, Float32Array> }> {
    return this.run(weights, chunk, { groups: [{ cache, chunk }] }, control, buffers, collect);
  }

  /**
   * Chunks of several sequences that each keep their own cache, in one pass: the final-normed hidden states [Σ rows,
   * H], each sequence's rows in turn, as forward's. Their projections share calls (a row's products depend on that
   * row alone), their norms and GELU one call or graph run; each has
   * its own attention, exactly as that sequence alone: a decode step (one token each, after its prefill) in one
   * attendDecode call, prefill chunks one graph run each.
   */
  async forwardRows(
    weights: WeightSource,
    rows: { cache: KvCache; chunk: Chunk }[],
    control: CallControl,
    buffers: CallBuffers,
  ): Promise<Float32Array> {
    if (rows.some(({ cache }) => cache.batch !== 1)) throw new Error('forwardRows takes chunks of one sequence each');
    // One block of rows for the projector and the norms; attention reads each row group's own chunk.
    const ids = Int32Array.from(rows.flatMap(({ chunk }) => [...chunk.ids]));
    const positions = Int32Array.from(rows.flatMap(({ chunk }) => [...chunk.positions]));
    const merged: Chunk = { ids, positions, start: 0, T: ids.length };
    if (!rows.every(({ chunk }) => chunk.T === 1 && chunk.start > 0)) {
      return (await this.run(weights, merged, { groups: rows }, control, buffers, { layers: [], from: 0, to: 0 }))
        .final;
    }
    const decode: DecodeRows = {
      rows: rows.map(({ cache }, r) => ({ cache, position: merged.positions[r]! })),
      rope: await this.decodeRope(merged.positions),
    };
    const { final } = await this.run(weights, merged, { decode }, control, buffers, { layers: [], from: 0, to: 0 });
    for (const { cache, chunk } of rows) cache.advance(chunk.positions, chunk.start, 1);
    return final;
  }

  private async run(
    weights: WeightSource,
    chunk: Chunk,
    attention: { groups: { cache: KvCache; chunk: Chunk }[] } | { decode: DecodeRows },
    control: CallControl,
    buffers: CallBuffers,
    collect: Collect,
  ): Promise<{ final: Float32Array; layerRows: Map<number, Float32Array> }> {
    const c = this.config;
    const H = c.hidden_size;
    const M = chunk.ids.length;
    const scale = (name: string) => {
      const w = bf16ToF32(weights.bf16(name));
      for (let i = 0; i < w.length; i++) w[i] = Math.fround(1 + w[i]!);
      return tensor(w, [w.length]);
    };
    const groups: AttentionGroup[] = [];
    if ('groups' in attention)
      for (const group of attention.groups)
        groups.push({ ...group, positions: await this.positions(group.cache, group.chunk) });
    const context: LayerContext = {
      config: c,
      graphs: this.graphs,
      project: this.projector.forChunk(weights, chunk, buffers),
      buffers,
      attention: 'decode' in attention ? attention : { groups },
      firstChunkPastSlots: this.projector.firstChunkPastSlots,
      scale,
      pointwise: this.arithmetic.pointwise,
      bf16: this.arithmetic.precision === 'bf16',
    };
    const h = this.embed(weights, chunk);
    const first = layerTensorNames(c.tensor_prefix, 0).input_layernorm;
    let residual: Residual = { h, x: await this.firstNorm(h, scale(first), M) };
    const layerRows = new Map<number, Float32Array>();
    for (let layer = 0; layer < c.num_hidden_layers; layer++) {
      residual = await decoderLayer(layer, residual, context);
      if (collect.layers.includes(layer)) layerRows.set(layer, residual.h.slice(collect.from * H, collect.to * H));
      // A prefill chunk is seconds of work at 1B: its layers are slices too, so that another call waits for one layer.
      if (M >= SLICE_ROWS && layer + 1 < c.num_hidden_layers) await between(control);
    }
    for (const group of groups) group.cache.advance(group.chunk.positions, group.chunk.start, group.chunk.T);
    return { final: residual.x, layerRows };
  }

  /** The first layer's input norm: the kernel's on the CPU, the norm graph on a device. */
  private async firstNorm(h: Float32Array, scale: ort.Tensor, M: number): Promise<Float32Array> {
    if (this.arithmetic.pointwise === 'kernel') {
      const y = new Float32Array(h.length);
      rmsNorm(h, scale.data as Float32Array, y, this.config.rms_norm_eps);
      return y;
    }
    const { y } = await this.graphs.norm.run({ x: tensor(h, [M, this.config.hidden_size]), scale });
    return y!.data as Float32Array;
  }

  /**
   * Gemma3TextScaledWordEmbedding: embedding rows × √H, in float32, or in bf16 precision as HF's BF16 model computes
   * it: the scale rounded to BF16 (√1152 becomes 34) and each product rounded to BF16.
   */
  private embed(weights: WeightSource, chunk: Chunk): Float32Array {
    const H = this.config.hidden_size;
    const M = chunk.ids.length;
    const embedding = weights.bf16(embedTokensName(this.config.tensor_prefix));
    const bf16 = this.arithmetic.precision === 'bf16';
    const factor = bf16 ? roundToBf16(embedScale(this.config)) : embedScale(this.config);
    const h = new Float32Array(M * H);
    const row = new Float32Array(H);
    for (let i = 0; i < M; i++) {
      const id = chunk.ids[i]!;
      bf16ToF32(embedding.subarray(id * H, (id + 1) * H), row);
      for (let j = 0; j < H; j++) h[i * H + j] = Math.fround(row[j]! * factor);
    }
    if (bf16) roundBf16(h);
    return h;
  }

  /**
   * cos_<type> / sin_<type> at `positions` ([rows, D/2] values): RoPE's tables of the CPU path (rope.ts), which needs
   * no masks (its attention kernels test each key's position).
   */
  private cpuRope(positions: Int32Array): ort.InferenceSession.OnnxValueMapType {
    const out: Record<string, ort.Tensor> = {};
    for (const type of new Set(this.config.layer_types)) {
      const { cos, sin } = this.rope.tables(type, positions);
      const dims = [positions.length, this.config.head_dim / 2];
      out[`cos_${type}`] = tensor(cos, dims);
      out[`sin_${type}`] = tensor(sin, dims);
    }
    return out;
  }

  /** cos_<type> / sin_<type> [R, 1, D/2] for a decode step's rows at `positions` (the masks it also makes go unused). */
  private async decodeRope(positions: Int32Array): Promise<ort.InferenceSession.OnnxValueMapType> {
    if (this.arithmetic.pointwise === 'kernel') return this.cpuRope(positions);
    const column = tensor(positions, [positions.length, 1]);
    const feeds: Record<string, ort.Tensor> = { rope_positions: column, query_positions: column };
    for (const type of new Set(this.config.layer_types)) feeds[`key_positions_${type}`] = column;
    return this.graphs.positions.run(feeds);
  }

  /**
   * RoPE angles and masks, shared by every layer of a type. A call's first chunk finds its cache empty: it attends to
   * its own keys only (and the projector's never-attended past slots, position −1), and the cache is not scored.
   */
  private async positions(cache: KvCache, chunk: Chunk): Promise<ort.InferenceSession.OnnxValueMapType> {
    if (this.arithmetic.pointwise === 'kernel') return this.cpuRope(chunk.positions);
    const B = cache.batch;
    const { T } = chunk;
    const feeds: Record<string, ort.Tensor> = {
      rope_positions: tensor(
        Int32Array.from(chunk.positions, (p) => Math.max(p, 0)),
        [B, T],
      ),
      query_positions: tensor(chunk.positions, [B, T]),
    };
    const fresh = chunk.start === 0;
    for (const type of new Set(this.config.layer_types)) {
      const keys = !fresh
        ? cache.keyPositions(type, chunk.positions, T)
        : this.projector.firstChunkPastSlots === 1
          ? withNeverSlot(chunk.positions, B, T)
          : chunk.positions;
      feeds[`key_positions_${type}`] = tensor(keys, [B, keys.length / B]);
    }
    return this.graphs.positions.run(feeds);
  }
}
