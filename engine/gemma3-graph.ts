// The Gemma 3 text decoder as onnxruntime graphs that run between its matrix products, built from config.json alone.
// Mirrors Hugging Face transformers src/transformers/models/gemma3/modeling_gemma3.py (commit 0018aa64…):
// Gemma3RMSNorm, Gemma3RotaryEmbedding + apply_rotary_pos_emb, Gemma3Attention (eager_attention_forward), Gemma3MLP's
// gelu_pytorch_tanh, Gemma3DecoderLayer's residual blocks. Numerics: float32 throughout, as HF runs with
// torch_dtype=float32 on exact float32 values of the BF16 weights.
//
// The projections (q, k, v, o, gate, up, down and the tied head) are not in these graphs: the engine multiplies BF16
// weights itself (runtime.ts), because onnxruntime has no BF16 MatMul on x86 and a float32 copy of every weight would
// double the bytes a decode step reads; only prefill's projections come back here, one float32 tile at a time
// (`linear`), and on a device every projection does, its weight held by the session (`projection`, device.ts). Small
// weights (the norms) enter as float32 inputs.
//
// Rows are flattened [M, features] with M = batch × tokens, except in the attention graph, which needs [B, T, …].
import type { Gemma3TextConfig, LayerType } from './config.ts';
import { bf16ToF32 } from './bf16.ts';
import { DataType, GraphBuilder, type Dim } from './onnx-builder.ts';

export const FLOAT_MIN = -3.4028234663852886e38; // torch.finfo(float32).min, HF's additive mask value

const F = DataType.FLOAT;
const I64 = DataType.INT64;
const I32 = DataType.INT32;
/** ONNX opset 23: RMSNormalization, RotaryEmbedding and Gelu(approximate='tanh') are single nodes there. */
const OPSET = 23;

/** inv_freq[i] = 1 / base^(2i / D) in float32 (HF Gemma3RotaryEmbedding), divided by the linear factor. */
export function ropeInvFreq(base: number, headDim: number, linearFactor: number): Float32Array {
  const inv = new Float32Array(headDim / 2);
  for (let i = 0; i < headDim / 2; i++) {
    const exponent = Math.fround(Math.fround(2 * i) / headDim);
    inv[i] = Math.fround(Math.fround(1 / Math.fround(base ** exponent)) / linearFactor);
  }
  return inv;
}

/** Gemma3Attention's score scaling, query_pre_attn_scalar^−½ (eager: applied after QKᵀ). */
export function attentionScaling(config: Gemma3TextConfig): number {
  return config.query_pre_attn_scalar ** -0.5;
}

/** √hidden_size as HF computes it with float32 weights (a float32 scalar buffer). */
export function embedScale(config: Gemma3TextConfig): number {
  return Math.fround(Math.sqrt(config.hidden_size));
}

/**
 * Gemma3RMSNorm over the last axis in float32: x · rsqrt(mean(x²) + eps) · (1 + w), as one RMSNormalization node (ONNX
 * opset 23). `scale` is 1 + w, added in float32 by the caller (the same single rounding as HF's `1.0 + weight`).
 */
function rmsNorm(g: GraphBuilder, x: string, scale: string, eps: number): string {
  return g.one('RMSNormalization', [x, scale], { axis: { i: -1 }, epsilon: { f: eps } });
}

/** `norm`: y = rmsNorm(x) with scale = 1 + w. Inputs x [M,H], scale [H]; output y. */
export function buildNormGraph(config: Gemma3TextConfig): Uint8Array {
  const g = new GraphBuilder();
  const x = g.input('x', F, ['M', config.hidden_size]);
  const scale = g.input('scale', F, [config.hidden_size]);
  g.output('y', rmsNorm(g, x, scale, config.rms_norm_eps), F, ['M', config.hidden_size]);
  return g.toBytes('gemma3_norm', OPSET);
}

/**
 * `residual_norm`: one residual block's end and the next block's norm (Gemma3DecoderLayer):
 * h_out = h + rmsNorm(a, post), y = rmsNorm(h_out, next). Inputs h, a [M,H], post, next [H] (1 + w each). With
 * `roundResidual` (bf16 precision) h_out is rounded to BF16 (a Cast there and back, ties to even) before its norm.
 */
export function buildResidualNormGraph(config: Gemma3TextConfig, { roundResidual = false } = {}): Uint8Array {
  const g = new GraphBuilder();
  const H = config.hidden_size;
  const h = g.input('h', F, ['M', H]);
  const a = g.input('a', F, ['M', H]);
  const sum = g.one('Add', [h, rmsNorm(g, a, g.input('post', F, [H]), config.rms_norm_eps)]);
  const hOut = roundResidual ? roundToBf16(g, sum) : sum;
  g.output('h_out', hOut, F, ['M', H]);
  g.output('y', rmsNorm(g, hOut, g.input('next', F, [H]), config.rms_norm_eps), F, ['M', H]);
  return g.toBytes('gemma3_residual_norm', OPSET);
}

/** `gated_gelu`: Gemma3MLP's gelu_pytorch_tanh(gate) · up, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function buildGatedGeluGraph(config: Gemma3TextConfig): Uint8Array {
  const g = new GraphBuilder();
  const I = config.intermediate_size;
  const gate = g.input('gate', F, ['M', I]);
  const up = g.input('up', F, ['M', I]);
  g.output('z', g.one('Mul', [g.one('Gelu', [gate], { approximate: { s: 'tanh' } }), up]), F, ['M', I]);
  return g.toBytes('gemma3_gated_gelu', OPSET);
}

/**
 * `positions`: what every layer of one type shares within a chunk, computed once per chunk instead of in each layer.
 * Inputs  rope_positions [B,T] i32 (RoPE angle positions), query_positions [B,T] i32 (−1: padding), and per layer
 *         type key_positions_<type> [B,S] i32 (the cache slots' positions, then the chunk's; −1: never attended).
 * Outputs per layer type cos_<type> / sin_<type> [B,T,D/2] (Gemma3RotaryEmbedding: local layers are never scaled;
 *         one half of HF's cat(freqs, freqs)), and mask_<type> [B,1,rep·T,S], the additive mask (0 where key k is
 *         visible to query q: 0 ≤ k ≤ q and, on sliding layers, q − k < sliding_window; float32 min elsewhere),
 *         tiled over the query heads that share a KV head (rows r·T + t, as the attention graph groups them).
 */
export function buildPositionsGraph(config: Gemma3TextConfig): Uint8Array {
  const g = new GraphBuilder();
  const { head_dim: D, num_attention_heads: nH, num_key_value_heads: nKV } = config;
  const rep = nH / nKV;
  const ropePositions = g.input('rope_positions', I32, ['B', 'T']);
  const queryPositions = g.input('query_positions', I32, ['B', 'T']);
  const angles = g.one('Unsqueeze', [
    g.one('Cast', [ropePositions], { to: { i: F } }),
    g.constInt64([-1], [1], 'axis'),
  ]); // [B,T,1]
  const queryPos = g.one('Unsqueeze', [queryPositions, g.constInt64([1, 3], [2], 'axes')]); // [B,1,T,1]
  for (const type of new Set(config.layer_types)) {
    const [base, factor] =
      type === 'sliding_attention' ? [config.rope_local_base_freq, 1] : [config.rope_theta, config.rope_linear_factor];
    const freqs = g.one('Mul', [angles, g.constFloat(ropeInvFreq(base, D, factor), [D / 2], 'inv_freq')]); // [B,T,D/2]
    g.output(`cos_${type}`, g.one('Cos', [freqs]), F, ['B', 'T', D / 2]);
    g.output(`sin_${type}`, g.one('Sin', [freqs]), F, ['B', 'T', D / 2]);

    const keyPos = g.one('Unsqueeze', [
      g.input(`key_positions_${type}`, I32, ['B', `S_${type}`]),
      g.constInt64([1, 2], [2], 'axes'),
    ]); // [B,1,1,S]
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
    g.output(`mask_${type}`, mask, F, ['B', 1, 'rows', `S_${type}`]);
  }
  return g.toBytes('gemma3_positions', OPSET);
}

/**
 * `attention.<layer type>`: Gemma3Attention between its projections, for one chunk of T new tokens per sequence.
 * Inputs  q [B,T,nH·D], k / v [B,T,nKV·D] (projections of the chunk), q_norm / k_norm [D] (1 + w each),
 *         cos / sin [B,T,D/2] and mask [B,1,rep·T,P+T] (from `positions`), past_key / past_value [B,nKV,P,D] (the
 *         cache's slots, any order: the mask says which are attended).
 * Outputs context [B,T,nH·D], present_key / present_value [B,nKV,T,D] (the chunk's keys after norm and RoPE, and
 *         values, for the cache).
 * The cache and the chunk's own keys are scored apart and their scores joined, so the cache is read where it lies
 * (a Concat of keys and values would copy the whole cache at every decode step). With `bf16` (bf16 precision) the
 * queries and keys are rounded to BF16 after RoPE and the probabilities before the values, as HF's BF16 run has them.
 */
export function buildAttentionGraph(config: Gemma3TextConfig, type: LayerType, { bf16 = false } = {}): Uint8Array {
  const g = new GraphBuilder();
  const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D, rms_norm_eps: eps } = config;
  const q = g.input('q', F, ['B', 'T', nH * D]);
  const k = g.input('k', F, ['B', 'T', nKV * D]);
  const v = g.input('v', F, ['B', 'T', nKV * D]);
  const qNorm = g.input('q_norm', F, [D]);
  const kNorm = g.input('k_norm', F, [D]);
  const cos = g.input('cos', F, ['B', 'T', D / 2]);
  const sin = g.input('sin', F, ['B', 'T', D / 2]);
  const mask = g.input('mask', F, ['B', 1, 'rows', 'S']);
  const pastKey = g.input('past_key', F, ['B', nKV, 'P', D]);
  const pastValue = g.input('past_value', F, ['B', nKV, 'P', D]);

  const split = (x: string, heads: number) => g.one('Reshape', [x, g.constInt64([0, 0, heads, D], [4], 'split')]);
  const merge = (x: string, heads: number) => g.one('Reshape', [x, g.constInt64([0, 0, heads * D], [3], 'merge')]);
  const toHeads = (x: string) => g.one('Transpose', [x], { perm: { ints: [0, 2, 1, 3] } }); // [B,T,h,D] → [B,h,T,D]
  const queries = toHeads(split(normRope(g, q, qNorm, nH, cos, sin, D, eps, bf16), nH)); // [B,nH,T,D]
  const keys = toHeads(split(normRope(g, k, kNorm, nKV, cos, sin, D, eps, bf16), nKV)); // [B,nKV,T,D]
  const values = toHeads(split(v, nKV));
  g.output('present_key', keys, F, ['B', nKV, 'T', D]);
  g.output('present_value', values, F, ['B', nKV, 'T', D]);

  // GQA without repeat_kv: query heads h = kv·rep + r become rows r·T + t of their KV head's group.
  const grouped = g.one('Reshape', [queries, g.constInt64([0, nKV, -1, D], [4], 'grouped_shape')]); // [B,nKV,rep·T,D]
  const scaling = { alpha: { f: attentionScaling(config) } };
  const scores = g.one('Concat', [g.matMulTransB(grouped, pastKey, scaling), g.matMulTransB(grouped, keys, scaling)], {
    axis: { i: -1 },
  });
  const softmax = g.one('Softmax', [g.one('Add', [scores, mask])], { axis: { i: -1 } });
  const probs = bf16 ? roundToBf16(g, softmax) : softmax;
  const slotsOf = (x: string) => g.one('Shape', [x], { start: { i: 2 }, end: { i: 3 } });
  const sizes = g.one('Concat', [slotsOf(pastKey), slotsOf(keys)], { axis: { i: 0 } }); // [P, T]
  const [probsPast, probsChunk] = g.op('Split', [probs, sizes], { axis: { i: -1 } }, { outputs: 2 });
  const context = g.one('Add', [g.one('MatMul', [probsPast!, pastValue]), g.one('MatMul', [probsChunk!, values])]);
  const ungrouped = g.one('Reshape', [context, g.constInt64([0, nH, -1, D], [4], 'ungrouped_shape')]); // [B,nH,T,D]
  g.output('context', merge(toHeads(ungrouped), nH), F, ['B', 'T', nH * D]);
  return g.toBytes(`gemma3_attention_${type}`, OPSET);
}

/**
 * q_norm or k_norm per head, then apply_rotary_pos_emb (rotate_half over the full head_dim): x [B,T,heads·D] →
 * [B,T,heads·D]; rounded to BF16 when `round` (bf16 precision, where HF's queries and keys are BF16 tensors).
 */
function normRope(
  g: GraphBuilder,
  x: string,
  scale: string,
  heads: number,
  cos: string,
  sin: string,
  D: number,
  eps: number,
  round: boolean,
) {
  const split = g.one('Reshape', [x, g.constInt64([0, 0, heads, D], [4], 'split')]);
  const merged = g.one('Reshape', [rmsNorm(g, split, scale, eps), g.constInt64([0, 0, heads * D], [3], 'merge')]);
  const rotated = g.one('RotaryEmbedding', [merged, cos, sin], { num_heads: { i: heads } });
  return round ? roundToBf16(g, rotated) : rotated;
}

/** x rounded to the nearest BF16 (ties to even) and back to float32: a Cast there and back. */
function roundToBf16(g: GraphBuilder, x: string): string {
  return g.one('Cast', [g.one('Cast', [x], { to: { i: DataType.BFLOAT16 } })], { to: { i: F } });
}

/**
 * `norm_rope`: a decode step's queries and new keys for attendDecode (kernels.ts), the attention graph's first half:
 * q_norm / k_norm per head and RoPE. Inputs q [R,1,nH·D], k [R,1,nKV·D], q_norm / k_norm [D] (1 + w each), cos / sin
 * [R,1,D/2]; outputs queries [R,1,nH·D] and keys [R,1,nKV·D].
 */
export function buildNormRopeGraph(config: Gemma3TextConfig, { bf16 = false } = {}): Uint8Array {
  const g = new GraphBuilder();
  const { num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D, rms_norm_eps: eps } = config;
  const cos = g.input('cos', F, ['R', 1, D / 2]);
  const sin = g.input('sin', F, ['R', 1, D / 2]);
  const [q, k] = [g.input('q', F, ['R', 1, nH * D]), g.input('k', F, ['R', 1, nKV * D])];
  const queries = normRope(g, q, g.input('q_norm', F, [D]), nH, cos, sin, D, eps, bf16);
  const keys = normRope(g, k, g.input('k_norm', F, [D]), nKV, cos, sin, D, eps, bf16);
  g.output('queries', queries, F, ['R', 1, nH * D]);
  g.output('keys', keys, F, ['R', 1, nKV * D]);
  return g.toBytes('gemma3_norm_rope', OPSET);
}

/**
 * `projection` (the device path, device.ts): y [M, rows] = x [M, K] · Wᵀ with W [N, K] held as an initializer, so
 * that it goes to the device once. `bf16`: W stays BF16 and is widened in the graph (exact, as the kernel widens it;
 * the engine turns constant folding off so that it is not folded into float32), else it is stored widened (for
 * providers without BF16). `ranged`: inputs start, end [1] int64 pick the rows W[start…end) (the head's blocks).
 */
export function buildProjectionGraph(
  bits: Uint16Array,
  [N, K]: [number, number],
  options: { bf16: boolean; ranged: boolean },
): Uint8Array {
  const g = new GraphBuilder();
  const x = g.input('x', F, ['M', K]);
  let w = g.initializer({
    name: 'w',
    dims: [N, K],
    dataType: options.bf16 ? DataType.BFLOAT16 : F,
    rawData: options.bf16
      ? new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength)
      : new Uint8Array(bf16ToF32(bits).buffer),
  });
  let rows: Dim = N;
  if (options.ranged) {
    w = g.one('Slice', [w, g.input('start', I64, [1]), g.input('end', I64, [1]), g.constInt64([0], [1], 'axes')]);
    rows = 'rows';
  }
  if (options.bf16) w = g.one('Cast', [w], { to: { i: F } });
  g.output('y', g.one('Gemm', [x, w], { transB: { i: 1 } }), F, ['M', rows]);
  return g.toBytes('gemma3_projection', OPSET);
}
