// The Gemma 3 text decoder as onnxruntime graphs that run between its matrix products, built from config.json alone.
// Mirrors Hugging Face transformers src/transformers/models/gemma3/modeling_gemma3.py (commit 0018aa64…):
// Gemma3RMSNorm, Gemma3RotaryEmbedding + apply_rotary_pos_emb, Gemma3Attention (eager_attention_forward), Gemma3MLP's
// gelu_pytorch_tanh, Gemma3DecoderLayer's residual blocks. Numerics: float32 throughout, as HF runs with
// torch_dtype=float32 on exact float32 values of the BF16 weights.
//
// The projections (q, k, v, o, gate, up, down and the tied head) are not in these graphs: the engine multiplies BF16
// weights itself (runtime.ts), because onnxruntime has no BF16 MatMul on x86 and a float32 copy of every weight would
// double the bytes a decode step reads. Small weights (the norms) enter as float32 inputs.
//
// Rows are flattened [M, features] with M = batch × tokens, except in the attention graph, which needs [B, T, …].
import type { Gemma3TextConfig, LayerType } from './config.ts';
import { DataType, GraphBuilder } from './onnx-builder.ts';

export const FLOAT_MIN = -3.4028234663852886e38; // torch.finfo(float32).min, HF's additive mask value

const F = DataType.FLOAT;
const I64 = DataType.INT64;
const I32 = DataType.INT32;

/** inv_freq[i] = 1 / base^(2i / D) in float32 (HF Gemma3RotaryEmbedding), divided by the linear factor. */
export function ropeInvFreq(base: number, headDim: number, linearFactor: number): Float32Array {
  const inv = new Float32Array(headDim / 2);
  for (let i = 0; i < headDim / 2; i++) {
    const exponent = Math.fround(Math.fround(2 * i) / headDim);
    inv[i] = Math.fround(Math.fround(1 / Math.fround(base ** exponent)) / linearFactor);
  }
  return inv;
}

/** √hidden_size as HF computes it with float32 weights (a float32 scalar buffer). */
export function embedScale(config: Gemma3TextConfig): number {
  return Math.fround(Math.sqrt(config.hidden_size));
}

/** Gemma3RMSNorm: x * rsqrt(mean(x²) + eps) * (1 + w), over the last axis, in float32 (HF PR #29402). */
function rmsNorm(g: GraphBuilder, x: string, weight: string, eps: number): string {
  const meanSquare = g.one('ReduceMean', [g.one('Mul', [x, x])], { axes: { ints: [-1] }, keepdims: { i: 1 } });
  const normed = g.one('Mul', [
    x,
    g.one('Reciprocal', [g.one('Sqrt', [g.one('Add', [meanSquare, g.constFloat([eps], [], 'eps')])])]),
  ]);
  return g.one('Mul', [normed, g.one('Add', [weight, g.constFloat([1], [], 'one')])]);
}

/** `norm`: y = rmsNorm(x, w). Inputs x [M,H], w [H]; output y. */
export function buildNormGraph(config: Gemma3TextConfig): Uint8Array {
  const g = new GraphBuilder();
  const x = g.input('x', F, ['M', config.hidden_size]);
  const w = g.input('w', F, [config.hidden_size]);
  g.output('y', rmsNorm(g, x, w, config.rms_norm_eps), F, ['M', config.hidden_size]);
  return g.toBytes('gemma3_norm');
}

/**
 * `residual_norm`: one residual block's end and the next block's norm (Gemma3DecoderLayer):
 * h_out = h + rmsNorm(a, w_post), y = rmsNorm(h_out, w_next). Inputs h, a [M,H], w_post, w_next [H].
 */
export function buildResidualNormGraph(config: Gemma3TextConfig): Uint8Array {
  const g = new GraphBuilder();
  const H = config.hidden_size;
  const h = g.input('h', F, ['M', H]);
  const a = g.input('a', F, ['M', H]);
  const hOut = g.one('Add', [h, rmsNorm(g, a, g.input('w_post', F, [H]), config.rms_norm_eps)]);
  g.output('h_out', hOut, F, ['M', H]);
  g.output('y', rmsNorm(g, hOut, g.input('w_next', F, [H]), config.rms_norm_eps), F, ['M', H]);
  return g.toBytes('gemma3_residual_norm');
}

/** `gated_gelu`: Gemma3MLP's gelu_pytorch_tanh(gate) · up, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function buildGatedGeluGraph(config: Gemma3TextConfig): Uint8Array {
  const g = new GraphBuilder();
  const I = config.intermediate_size;
  const x = g.input('gate', F, ['M', I]);
  const up = g.input('up', F, ['M', I]);
  const cube = g.one('Mul', [g.one('Mul', [x, x]), x]);
  const inner = g.one('Mul', [
    g.constFloat([Math.sqrt(2 / Math.PI)], [], 'gelu_c'),
    g.one('Add', [x, g.one('Mul', [g.constFloat([0.044715], [], 'gelu_a'), cube])]),
  ]);
  const gelu = g.one('Mul', [
    g.one('Mul', [g.constFloat([0.5], [], 'half'), x]),
    g.one('Add', [g.constFloat([1], [], 'one'), g.one('Tanh', [inner])]),
  ]);
  g.output('z', g.one('Mul', [gelu, up]), F, ['M', I]);
  return g.toBytes('gemma3_gated_gelu');
}

/**
 * `attention.<layer type>`: Gemma3Attention between its projections, for one chunk of T new tokens per sequence.
 * Inputs  q [B,T,nH·D], k / v [B,T,nKV·D] (projections of the chunk), q_norm / k_norm [D],
 *         rope_positions [B,T] i32 (RoPE angle positions), query_positions [B,T] i32 (−1: padding),
 *         past_key / past_value [B,nKV,P,D] (cache slots, any order), key_positions [B,P+T] i32 (the past slots'
 *         positions, then the chunk's; −1: empty or padding, never attended).
 * Outputs context [B,T,nH·D], present_key / present_value [B,nKV,T,D] (the chunk's keys after norm and RoPE, and
 *         values, for the cache). The mask is built here from positions: key k is visible to query q when
 *         0 ≤ k ≤ q and, on sliding layers, q − k < sliding_window.
 */
export function buildAttentionGraph(config: Gemma3TextConfig, type: LayerType): Uint8Array {
  const g = new GraphBuilder();
  const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D } = config;
  const rep = nH / nKV;
  const q = g.input('q', F, ['B', 'T', nH * D]);
  const k = g.input('k', F, ['B', 'T', nKV * D]);
  const v = g.input('v', F, ['B', 'T', nKV * D]);
  const qNorm = g.input('q_norm', F, [D]);
  const kNorm = g.input('k_norm', F, [D]);
  const ropePositions = g.input('rope_positions', I32, ['B', 'T']);
  const queryPositions = g.input('query_positions', I32, ['B', 'T']);
  const keyPositions = g.input('key_positions', I32, ['B', 'S']);
  const pastKey = g.input('past_key', F, ['B', nKV, 'P', D]);
  const pastValue = g.input('past_value', F, ['B', nKV, 'P', D]);

  // Gemma3RotaryEmbedding: cos/sin [B,1,T,D] from float32 positions; local layers are never scaled.
  const [base, factor] =
    type === 'sliding_attention' ? [config.rope_local_base_freq, 1] : [config.rope_theta, config.rope_linear_factor];
  const angles = g.one('Unsqueeze', [
    g.one('Cast', [ropePositions], { to: { i: F } }),
    g.constInt64([-1], [1], 'axis'),
  ]); // [B,T,1]
  const freqs = g.one('Mul', [angles, g.constFloat(ropeInvFreq(base, D, factor), [D / 2], 'inv_freq')]); // [B,T,D/2]
  const emb = g.one('Unsqueeze', [
    g.one('Concat', [freqs, freqs], { axis: { i: -1 } }),
    g.constInt64([1], [1], 'axis'),
  ]); // [B,1,T,D]
  const cos = g.one('Cos', [emb]);
  const sin = g.one('Sin', [emb]);
  const lastAxis = g.constInt64([-1], [1], 'axis');
  /** apply_rotary_pos_emb: x·cos + rotate_half(x)·sin, rotate_half(x) = cat(−x2, x1) over the full head_dim. */
  const applyRope = (x: string): string => {
    const x1 = g.one('Slice', [x, g.constInt64([0], [1], 'start'), g.constInt64([D / 2], [1], 'half'), lastAxis]);
    const x2 = g.one('Slice', [x, g.constInt64([D / 2], [1], 'half'), g.constInt64([D], [1], 'end'), lastAxis]);
    const rotated = g.one('Concat', [g.one('Neg', [x2]), x1], { axis: { i: -1 } });
    return g.one('Add', [g.one('Mul', [x, cos]), g.one('Mul', [rotated, sin])]);
  };
  const toHeads = (x: string, heads: number) =>
    g.one('Transpose', [g.one('Reshape', [x, g.constInt64([0, 0, heads, D], [4], 'heads_shape')])], {
      perm: { ints: [0, 2, 1, 3] },
    }); // [B,heads,T,D]

  const eps = config.rms_norm_eps;
  const queries = applyRope(rmsNorm(g, toHeads(q, nH), qNorm, eps)); // [B,nH,T,D]
  const keys = applyRope(rmsNorm(g, toHeads(k, nKV), kNorm, eps)); // [B,nKV,T,D]
  const values = toHeads(v, nKV);
  g.output('present_key', keys, F, ['B', nKV, 'T', D]);
  g.output('present_value', values, F, ['B', nKV, 'T', D]);
  const allKeys = g.one('Concat', [pastKey, keys], { axis: { i: 2 } }); // [B,nKV,S,D]
  const allValues = g.one('Concat', [pastValue, values], { axis: { i: 2 } });

  // Additive mask [B,1,T,S] from positions, tiled over the query heads that share a KV head: [B,1,rep·T,S].
  const queryPos = g.one('Unsqueeze', [queryPositions, g.constInt64([1, 3], [2], 'axes')]); // [B,1,T,1]
  const keyPos = g.one('Unsqueeze', [keyPositions, g.constInt64([1, 2], [2], 'axes')]); // [B,1,1,S]
  let visible = g.one('And', [
    g.one('GreaterOrEqual', [keyPos, g.constInt32([0], 'zero')]),
    g.one('LessOrEqual', [keyPos, queryPos]),
  ]);
  if (type === 'sliding_attention') {
    visible = g.one('And', [
      visible,
      g.one('Less', [g.one('Sub', [queryPos, keyPos]), g.constInt32([config.sliding_window], 'window')]),
    ]);
  }
  let mask = g.one('Where', [visible, g.constFloat([0], [], 'zero'), g.constFloat([FLOAT_MIN], [], 'float_min')]);
  if (rep > 1) mask = g.one('Tile', [mask, g.constInt64([1, 1, rep, 1], [4], 'mask_tile')]);

  // GQA without repeat_kv: query heads h = kv·rep + r become rows r·T + t of their KV head's group.
  const grouped = g.one('Reshape', [queries, g.constInt64([0, nKV, -1, D], [4], 'grouped_shape')]); // [B,nKV,rep·T,D]
  const scores = g.one('Mul', [
    g.matMulTransB(grouped, allKeys),
    g.constFloat([config.query_pre_attn_scalar ** -0.5], [], 'scaling'),
  ]); // eager: scale after QKᵀ
  const probs = g.one('Softmax', [g.one('Add', [scores, mask])], { axis: { i: -1 } });
  const context = g.one('Reshape', [
    g.one('MatMul', [probs, allValues]),
    g.constInt64([0, nH, -1, D], [4], 'ungrouped_shape'),
  ]); // [B,nH,T,D]
  const merged = g.one('Reshape', [
    g.one('Transpose', [context], { perm: { ints: [0, 2, 1, 3] } }),
    g.constInt64([0, 0, nH * D], [3], 'merged_shape'),
  ]);
  g.output('context', merged, F, ['B', 'T', nH * D]);
  return g.toBytes(`gemma3_attention_${type}`);
}

/**
 * `head_partial`: per-row reductions of one vocabulary block of logits, so that log-softmax and top-k over the
 * whole vocabulary can be merged from blocks without holding [rows, vocab]. Inputs logits [R,Vb], target [R] i32 (an
 * index into the block, clamped by the caller), k [1] i64. Outputs max [R], sum_exp [R] = Σ exp(logit − max), target_logit [R],
 * top_values / top_ids [R,k] (descending; equal values keep the lower index first, as TopK does).
 */
export function buildHeadPartialGraph(): Uint8Array {
  const g = new GraphBuilder();
  const logits = g.input('logits', F, ['R', 'V']);
  const target = g.input('target', DataType.INT32, ['R']);
  const k = g.input('k', I64, [1]);
  const lastAxis = g.constInt64([-1], [1], 'axis');
  const max = g.one('ReduceMax', [logits], { axes: { ints: [-1] }, keepdims: { i: 1 } });
  const sumExp = g.one('ReduceSum', [g.one('Exp', [g.one('Sub', [logits, max])]), lastAxis], { keepdims: { i: 0 } });
  g.output('max', g.one('Squeeze', [max, lastAxis]), F, ['R']);
  g.output('sum_exp', sumExp, F, ['R']);
  const picked = g.one('GatherElements', [logits, g.one('Unsqueeze', [target, lastAxis])], { axis: { i: 1 } });
  g.output('target_logit', g.one('Squeeze', [picked, lastAxis]), F, ['R']);
  const [values, ids] = g.op('TopK', [logits, k], { axis: { i: -1 } }, { outputs: 2 });
  g.output('top_values', values!, F, ['R', 'k']);
  g.output('top_ids', ids!, I64, ['R', 'k']);
  return g.toBytes('head_partial');
}
