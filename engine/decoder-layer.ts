// One Gemma 3 decoder layer over one chunk, as Hugging Face's Gemma3DecoderLayer.forward (modeling_gemma3.py) runs
// it: residual → input_layernorm → self_attn → post_attention_layernorm → add, then residual →
// pre_feedforward_layernorm → mlp → post_feedforward_layernorm → add. The projections go through the engine's
// projector; the norms, attention and GELU are small onnxruntime graphs (graphs.ts), except a decode step's attention
// proper, which is attendDecode's (kernels.ts): one call for all rows, and on the CPU the norms between sublayers and
// the GELU, residualNorm's and gatedGelu's (kernels.ts). Each add runs fused with the norm after it (h + post(a), then
// next(h)), so the layer takes its input already normed by its input_layernorm and hands the next layer its input
// normed by that layer's (or the final norm).
import type * as ort from 'onnxruntime-node';
import type { CallBuffers } from './call-buffers.ts';
import type { Chunk } from './chunk.ts';
import type { Gemma3TextConfig, LayerType } from './config.ts';
import { attentionScaling } from './gemma3-graph.ts';
import { tensor, type Graphs } from './graphs.ts';
import {
  attendChunk,
  attendDecode,
  gatedGelu,
  normRope,
  residualNorm as kernelResidualNorm,
  roundBf16,
  type DecodeAttentionShape,
} from './kernels.ts';
import type { KvCache } from './kv-cache.ts';
import { finalNormName, layerTensorNames, type LayerTensorNames } from './names.ts';
import type { Project } from './projector.ts';

/**
 * The residual stream h [M, H] and its normed copy x, the input of the next sublayer. With the kernel's pointwise
 * work, h is the forward pass's own array, updated in place, and x lies in the call's buffers until the next norm.
 */
export type Residual = { h: Float32Array; x: Float32Array };

/**
 * Where the pointwise work between the projections runs (the norms between sublayers and the gated GELU): the
 * kernel's on the CPU (a pass over the rows, none of a graph run's costs: docs/benchmarks.md), the graphs on a
 * device's provider.
 */
export type Pointwise = 'kernel' | 'graph';

/**
 * Consecutive rows of a chunk whose attention reads and writes one KV cache: the whole batch of a left-padded call,
 * or one row of continuous batching (its own cache, its own time).
 */
export type AttentionGroup = {
  cache: KvCache;
  /** The group's own part of the chunk (its ids, positions and padded start time). */
  chunk: Chunk;
  /** RoPE tables and masks of each layer type (the positions graph's outputs for this group's chunk). */
  positions: ort.InferenceSession.OnnxValueMapType;
};

/**
 * A decode step of continuous batching: rows of one new token each, at their own time in their own cache (no
 * padding: time = position).
 */
export type DecodeRows = {
  rows: { cache: KvCache; position: number }[];
  /** cos_<type> / sin_<type> [R, 1, D/2] of every row (the positions graph's outputs over all rows). */
  rope: ort.InferenceSession.OnnxValueMapType;
};

/** What every layer of one chunk shares. */
export type LayerContext = {
  config: Gemma3TextConfig;
  graphs: Graphs;
  project: Project;
  /** The call's buffers (call-buffers.ts): the projector's products and attention's output go there. */
  buffers: CallBuffers;
  /** The chunk's rows in order, by the cache their attention uses (a prefill chunk), or a decode step's rows. */
  attention: { groups: AttentionGroup[] } | { decode: DecodeRows };
  /** Past slots of a call's first chunk (Projector.firstChunkPastSlots); later chunks attend to the cache. */
  firstChunkPastSlots: 0 | 1;
  /** A norm's scale 1 + w in float32 (Gemma3RMSNorm's `1.0 + weight.float()`). */
  scale: (name: string) => ort.Tensor;
  /** Where the norms between sublayers and the GELU run. */
  pointwise: Pointwise;
  /**
   * bf16 precision: the residual stream is rounded to BF16 after every add, the queries and keys after RoPE and
   * attention's probabilities before the values (the graphs were built to match).
   */
  bf16: boolean;
};

export async function decoderLayer(layer: number, { h, x }: Residual, c: LayerContext): Promise<Residual> {
  const n = layerTensorNames(c.config.tensor_prefix, layer);
  const attention = await selfAttention(layer, n, x, c);
  const mid = await residualNorm(c, h, attention, n.post_attention_layernorm, n.pre_feedforward_layernorm);
  const mlp = await gatedMlp(n, mid.x, c);
  const next =
    layer + 1 < c.config.num_hidden_layers
      ? layerTensorNames(c.config.tensor_prefix, layer + 1).input_layernorm
      : finalNormName(c.config.tensor_prefix);
  return residualNorm(c, mid.h, mlp, n.post_feedforward_layernorm, next);
}

/**
 * Gemma3Attention: q, k and v projected in one call for the whole chunk; then for each group of rows sharing a cache,
 * q_norm, k_norm, RoPE and attention over its cache and chunk in one graph (sliding or full by the layer's type) and
 * the chunk's keys and values stored, or a decode step's rows all at once (decodeAttention); o_proj for the whole chunk.
 */
async function selfAttention(layer: number, n: LayerTensorNames, x: Float32Array, c: LayerContext) {
  const { num_attention_heads: nH, head_dim: D } = c.config;
  const [q, k, v] = await c.project([n.q_proj, n.k_proj, n.v_proj], x);
  if ('decode' in c.attention) {
    const [o] = await c.project([n.o_proj], await decodeAttention(layer, n, c.attention.decode, q!, k!, v!, c));
    return o!;
  }
  const { groups } = c.attention;
  if (groups.length === 1) {
    const [o] = await c.project([n.o_proj], await groupAttention(layer, n, groups[0]!, q!, k!, v!, c));
    return o!;
  }
  const M = q!.length / (nH * D);
  const context = c.buffers.take('attention', q!.length);
  let row = 0;
  for (const group of groups) {
    const rows = group.cache.batch * group.chunk.T;
    const part = (y: Float32Array) => y.slice((row * y.length) / M, ((row + rows) * y.length) / M);
    const out = await groupAttention(layer, n, group, part(q!), part(k!), part(v!), c);
    context.set(out, row * nH * D);
    row += rows;
  }
  const [o] = await c.project([n.o_proj], context);
  return o!;
}

/**
 * A decode step's attention: q_norm, k_norm and RoPE for every row in one graph, then attendDecode over each row's
 * own cache in one call (the same math as the attention graph, within float32 rounding; each row bitwise the same
 * whatever rows share the step); each row's new key and value go to its cache.
 */
async function decodeAttention(
  layer: number,
  n: LayerTensorNames,
  { rows, rope }: DecodeRows,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  c: LayerContext,
): Promise<Float32Array> {
  const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D } = c.config;
  const type = c.config.layer_types[layer]!;
  const R = rows.length;
  const [queries, keys] = await queriesAndKeys(n, q, k, rope[`cos_${type}`]!, rope[`sin_${type}`]!, R, c);
  const context = c.buffers.take('attention', R * nH * D);
  attendDecode(
    queries,
    keys,
    v,
    context,
    rows.map(({ cache, position }) => {
      const past = cache.past(layer);
      return { pastKey: past.key, pastValue: past.value, slots: cache.heldPositions(type), position };
    }),
    attentionShape(c, type),
  );
  const width = nKV * D;
  rows.forEach(({ cache, position }, r) =>
    cache.store(layer, keys.subarray(r * width, (r + 1) * width), v.subarray(r * width, (r + 1) * width), position, 1),
  );
  return context;
}

/**
 * q_norm, k_norm and RoPE of R rows' q and k (one token each, or a chunk's tokens): the kernel's normRope into the
 * call's buffers on the CPU, the norm_rope graph on a device's provider.
 */
async function queriesAndKeys(
  n: LayerTensorNames,
  q: Float32Array,
  k: Float32Array,
  cos: ort.Tensor,
  sin: ort.Tensor,
  R: number,
  c: LayerContext,
): Promise<[Float32Array, Float32Array]> {
  const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D, rms_norm_eps: eps } = c.config;
  if (c.pointwise === 'kernel') {
    const queries = c.buffers.take('queries', q.length);
    const keys = c.buffers.take('keys', k.length);
    queries.set(q);
    keys.set(k);
    const [cosRows, sinRows] = [cos.data as Float32Array, sin.data as Float32Array];
    normRope(queries, c.scale(n.q_norm).data as Float32Array, cosRows, sinRows, nH, eps);
    normRope(keys, c.scale(n.k_norm).data as Float32Array, cosRows, sinRows, nKV, eps);
    if (c.bf16) {
      // HF's queries and keys are BF16 tensors after RoPE.
      roundBf16(queries);
      roundBf16(keys);
    }
    return [queries, keys];
  }
  const out = await c.graphs.normRope.run({
    q: tensor(q, [R, 1, nH * D]),
    k: tensor(k, [R, 1, nKV * D]),
    q_norm: c.scale(n.q_norm),
    k_norm: c.scale(n.k_norm),
    cos,
    sin,
  });
  return [out.queries!.data as Float32Array, out.keys!.data as Float32Array];
}

/**
 * One group's attention over its cache and its part of the chunk; its keys and values go to its cache. On the CPU a
 * one-sequence group takes the kernels (chunkAttention); a left-padded batch and a device take the graph.
 */
async function groupAttention(
  layer: number,
  n: LayerTensorNames,
  { cache, chunk, positions }: AttentionGroup,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  c: LayerContext,
): Promise<Float32Array> {
  const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D } = c.config;
  const [B, T] = [cache.batch, chunk.T];
  const type = c.config.layer_types[layer]!;
  if (c.pointwise === 'kernel' && B === 1) return chunkAttention(layer, n, { cache, chunk, positions }, q, k, v, c);
  const slots = c.firstChunkPastSlots;
  const past =
    chunk.start === 0
      ? {
          key: new Float32Array(B * nKV * slots * D),
          value: new Float32Array(B * nKV * slots * D),
          dims: [B, nKV, slots, D],
        }
      : cache.past(layer);
  const out = await c.graphs.attention[type]!.run({
    q: tensor(q, [B, T, nH * D]),
    k: tensor(k, [B, T, nKV * D]),
    v: tensor(v, [B, T, nKV * D]),
    q_norm: c.scale(n.q_norm),
    k_norm: c.scale(n.k_norm),
    cos: positions[`cos_${type}`]!,
    sin: positions[`sin_${type}`]!,
    mask: positions[`mask_${type}`]!,
    past_key: tensor(past.key, past.dims),
    past_value: tensor(past.value, past.dims),
  });
  cache.store(layer, out.present_key!.data as Float32Array, out.present_value!.data as Float32Array, chunk.start, T);
  return out.context!.data as Float32Array;
}

/**
 * A one-sequence group's attention in the kernels: normRope, then attendChunk over the cache's slots as they are and
 * the chunk's own keys, which then go to the cache (as the attention graph does it, within float32 rounding).
 */
async function chunkAttention(
  layer: number,
  n: LayerTensorNames,
  { cache, chunk, positions }: AttentionGroup,
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  c: LayerContext,
): Promise<Float32Array> {
  const { num_attention_heads: nH, head_dim: D } = c.config;
  const type = c.config.layer_types[layer]!;
  const T = chunk.T;
  const [queries, keys] = await queriesAndKeys(n, q, k, positions[`cos_${type}`]!, positions[`sin_${type}`]!, T, c);
  const context = c.buffers.take('group attention', T * nH * D);
  const past = cache.past(layer);
  const slots = cache.heldPositions(type);
  const shape = attentionShape(c, type);
  attendChunk(queries, keys, v, context, { ...past, slots }, chunk.positions, shape);
  cache.storeTokens(layer, keys, v, chunk.start, T);
  return context;
}

/**
 * What the attention kernels take of a layer of `type`: its heads, scaling and sliding window (0: full), and in bf16
 * precision the probabilities rounded to BF16.
 */
function attentionShape({ config, bf16 }: LayerContext, type: LayerType): DecodeAttentionShape {
  return {
    heads: config.num_attention_heads,
    kvHeads: config.num_key_value_heads,
    headDim: config.head_dim,
    scaling: attentionScaling(config),
    window: type === 'sliding_attention' ? config.sliding_window : 0,
    bf16Probabilities: bf16,
  };
}

/** Gemma3MLP: down_proj(gelu_tanh(gate_proj(x)) · up_proj(x)), gate and up projected in one call. */
async function gatedMlp(n: LayerTensorNames, x: Float32Array, c: LayerContext): Promise<Float32Array> {
  const I = c.config.intermediate_size;
  const M = x.length / c.config.hidden_size;
  if (c.pointwise === 'kernel' && c.project.gatedGelu) {
    // The same bits as below, without gate's and up's [M, I] products written out and read back.
    const z = await c.project.gatedGelu(n.gate_proj, n.up_proj, x);
    return (await c.project([n.down_proj], z))[0]!;
  }
  const [gate, up] = await c.project([n.gate_proj, n.up_proj], x);
  if (c.pointwise === 'kernel') {
    const z = c.buffers.take('gelu', M * I);
    gatedGelu(gate!, up!, z);
    return (await c.project([n.down_proj], z))[0]!;
  }
  const { z } = await c.graphs.gatedGelu.run({ gate: tensor(gate!, [M, I]), up: tensor(up!, [M, I]) });
  const [down] = await c.project([n.down_proj], z!.data as Float32Array);
  return down!;
}

/** h + post(a) (a sublayer's output normed, added to the residual), and that sum normed by `next`. */
async function residualNorm(
  c: LayerContext,
  h: Float32Array,
  a: Float32Array,
  post: string,
  next: string,
): Promise<Residual> {
  if (c.pointwise === 'kernel') {
    // The next sublayer's projections read x before the next norm writes it again.
    const x = c.buffers.take('normed', h.length);
    const scale = (name: string) => c.scale(name).data as Float32Array;
    kernelResidualNorm(h, a, scale(post), scale(next), x, c.config.rms_norm_eps, c.bf16);
    return { h, x };
  }
  const H = c.config.hidden_size;
  const M = h.length / H;
  const out = await c.graphs.residualNorm.run({
    h: tensor(h, [M, H]),
    a: tensor(a, [M, H]),
    post: c.scale(post),
    next: c.scale(next),
  });
  return { h: out.h_out!.data as Float32Array, x: out.y!.data as Float32Array };
}
