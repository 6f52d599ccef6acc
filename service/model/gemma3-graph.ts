// The ONNX graph of the Gemma 3 text decoder, built from config.json alone.
// Mirrors Hugging Face transformers src/transformers/models/gemma3/modeling_gemma3.py (commit 0018aa64…):
// Gemma3TextScaledWordEmbedding, Gemma3RMSNorm, Gemma3RotaryEmbedding + apply_rotary_pos_emb, Gemma3Attention
// (eager_attention_forward), Gemma3MLP, Gemma3DecoderLayer, Gemma3TextModel, the tied LM head. Numerics: float32
// throughout (weights are exact float32 copies of the BF16 checkpoint), as HF runs with torch_dtype=float32.
//
// Weights enter by their checkpoint names, each bound either as a graph input (fed from JS memory; edits are visible
// at the next run) or as an external initializer pointing into the safetensors file (fastest; never changes).
//
// Inputs   input_ids [B,T] i64, position_ids [B,T] i64, mask_full / mask_sliding [B,1,T,P+T] f32 (additive),
//          gather_index [B,K] i64 (positions whose logits/hidden states are returned),
//          past_key.{i} / past_value.{i} [B,nKV,P,D] f32, (inspect) target_ids [B,K] i64.
// Outputs  logits [B,K,V]; present_key.{i} / present_value.{i} [B,nKV,T,D] (the new slices only: the KV cache lives
//          in JS); (inspect) target_logprobs [B,K], topk_logprobs / topk_ids [B,K,k], hidden.{l} [B,K,H].
import type { Gemma3TextConfig } from './config.ts';
import { DataType, GraphBuilder } from './onnx-builder.ts';
import { embedTokensName, expectedTextTensors, finalNormName, layerTensorNames } from '../weights/names.ts';

export type WeightBinding =
  | { kind: 'input' }
  | { kind: 'external'; location: string; offset: number; length: number; dtype: 'BF16' | 'F16' | 'F32'; shape: number[] };

export type GraphOptions = {
  bind: (name: string) => WeightBinding;
  /** Return logits [B,K,V] (generate, logits CLI). */
  logits?: boolean;
  /** Return log-probabilities of target_ids and the top-k next tokens at the gathered positions (inspect). */
  logprobs?: { topK: number };
  /** Return residual-stream vectors after these decoder layers at the gathered positions (inspect). */
  hiddenLayers?: number[];
};

export const FLOAT_MIN = -3.4028234663852886e38; // torch.finfo(float32).min, HF's additive mask value

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

export function buildGemma3Graph(config: Gemma3TextConfig, options: GraphOptions): Uint8Array {
  const g = new GraphBuilder();
  const { hidden_size: H, num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D, vocab_size: V } = config;
  const rep = nH / nKV;
  const F = DataType.FLOAT;
  const I64 = DataType.INT64;

  // Weights: a graph input, or a BF16 external initializer cast to float32 (folded once at session load).
  const shapes = expectedTextTensors(config);
  const weightValues = new Map<string, string>();
  const weight = (name: string): string => {
    const cached = weightValues.get(name);
    if (cached) return cached;
    const binding = options.bind(name);
    let value: string;
    if (binding.kind === 'input') {
      value = g.input(name, F, shapes.get(name)!);
    } else {
      const dataType = { BF16: DataType.BFLOAT16, F16: DataType.FLOAT16, F32: DataType.FLOAT }[binding.dtype];
      g.initializer({
        name,
        dims: binding.shape,
        dataType,
        dataLocation: 1, // EXTERNAL
        externalData: [
          { key: 'location', value: binding.location },
          { key: 'offset', value: String(binding.offset) },
          { key: 'length', value: String(binding.length) },
        ],
      });
      value = binding.dtype === 'F32' ? name : g.one('Cast', [name], { to: { i: F } });
    }
    weightValues.set(name, value);
    return value;
  };

  const inputIds = g.input('input_ids', I64, ['B', 'T']);
  const positionIds = g.input('position_ids', I64, ['B', 'T']);
  const maskFull = g.input('mask_full', F, ['B', 1, 'T', 'S']);
  const maskSliding = g.input('mask_sliding', F, ['B', 1, 'T', 'S']);
  const gatherIndex = g.input('gather_index', I64, ['B', 'K']);

  // Constants shared by all layers.
  const one = g.constFloat([1], [], 'one');
  const eps = g.constFloat([config.rms_norm_eps], [], 'eps');

  /** Gemma3RMSNorm: x * rsqrt(mean(x²) + eps) * (1 + w), over the last axis, in float32 (HF PR #29402). */
  const rmsNorm = (x: string, weightName: string): string => {
    const meanSquare = g.one('ReduceMean', [g.one('Mul', [x, x])], { axes: { ints: [-1] }, keepdims: { i: 1 } });
    const normed = g.one('Mul', [x, g.one('Reciprocal', [g.one('Sqrt', [g.one('Add', [meanSquare, eps])])])]);
    return g.one('Mul', [normed, g.one('Add', [weight(weightName), one])]);
  };

  // Gemma3RotaryEmbedding: cos/sin [B,1,T,D] per layer type, from float32 positions.
  const positions = g.one('Unsqueeze', [g.one('Cast', [positionIds], { to: { i: F } }), g.constInt64([-1], [1], 'axis')]); // [B,T,1]
  const rope = (base: number, factor: number) => {
    const freqs = g.one('Mul', [positions, g.constFloat(ropeInvFreq(base, D, factor), [D / 2], 'inv_freq')]); // [B,T,D/2]
    const emb = g.one('Unsqueeze', [g.one('Concat', [freqs, freqs], { axis: { i: -1 } }), g.constInt64([1], [1], 'axis')]); // [B,1,T,D]
    return { cos: g.one('Cos', [emb]), sin: g.one('Sin', [emb]) };
  };
  const ropeByType = {
    sliding_attention: rope(config.rope_local_base_freq, 1), // local layers are never scaled
    full_attention: rope(config.rope_theta, config.rope_linear_factor),
  };
  // Masks tiled over the query heads that share a KV head: [B,1,rep·T,S] (rows r·T + t, matching the q reshape).
  const tile = g.constInt64([1, 1, rep, 1], [4], 'mask_tile');
  const maskByType = {
    sliding_attention: rep > 1 ? g.one('Tile', [maskSliding, tile]) : maskSliding,
    full_attention: rep > 1 ? g.one('Tile', [maskFull, tile]) : maskFull,
  };

  const half = D / 2;
  const sliceStart = g.constInt64([0], [1], 'start');
  const sliceHalf = g.constInt64([half], [1], 'half');
  const sliceEnd = g.constInt64([D], [1], 'end');
  const lastAxis = g.constInt64([-1], [1], 'axis');
  /** apply_rotary_pos_emb: x·cos + rotate_half(x)·sin, rotate_half(x) = cat(−x2, x1) over the full head_dim. */
  const applyRope = (x: string, cos: string, sin: string): string => {
    const x1 = g.one('Slice', [x, sliceStart, sliceHalf, lastAxis]);
    const x2 = g.one('Slice', [x, sliceHalf, sliceEnd, lastAxis]);
    const rotated = g.one('Concat', [g.one('Neg', [x2]), x1], { axis: { i: -1 } });
    return g.one('Add', [g.one('Mul', [x, cos]), g.one('Mul', [rotated, sin])]);
  };

  const headsShape = (heads: number) => g.constInt64([0, 0, heads, D], [4], 'heads_shape');
  const toHeads = (x: string, heads: number) => g.one('Transpose', [g.one('Reshape', [x, headsShape(heads)])], { perm: { ints: [0, 2, 1, 3] } }); // [B,heads,T,D]
  const groupedShape = g.constInt64([0, nKV, -1, D], [4], 'grouped_shape');
  const ungroupedShape = g.constInt64([0, nH, -1, D], [4], 'ungrouped_shape');
  const mergedShape = g.constInt64([0, 0, nH * D], [3], 'merged_shape');
  const scaling = g.constFloat([config.query_pre_attn_scalar ** -0.5], [], 'scaling');

  /** Gemma3Attention with eager attention; returns [B,T,H] and registers the present K/V outputs. */
  const attention = (x: string, layer: number): string => {
    const n = layerTensorNames(config.tensor_prefix, layer);
    const type = config.layer_types[layer]!;
    const { cos, sin } = ropeByType[type];
    const q = applyRope(rmsNorm(toHeads(g.matMulTransB(x, weight(n.q_proj)), nH), n.q_norm), cos, sin); // [B,nH,T,D]
    const k = applyRope(rmsNorm(toHeads(g.matMulTransB(x, weight(n.k_proj)), nKV), n.k_norm), cos, sin); // [B,nKV,T,D]
    const v = toHeads(g.matMulTransB(x, weight(n.v_proj)), nKV); // [B,nKV,T,D]
    g.output(`present_key.${layer}`, k, F, ['B', nKV, 'T', D]);
    g.output(`present_value.${layer}`, v, F, ['B', nKV, 'T', D]);
    const keys = g.one('Concat', [g.input(`past_key.${layer}`, F, ['B', nKV, 'P', D]), k], { axis: { i: 2 } }); // [B,nKV,S,D]
    const values = g.one('Concat', [g.input(`past_value.${layer}`, F, ['B', nKV, 'P', D]), v], { axis: { i: 2 } });
    // GQA without repeat_kv: query heads h = kv·rep + r become rows r·T + t of their KV head's group.
    const grouped = g.one('Reshape', [q, groupedShape]); // [B,nKV,rep·T,D]
    const scores = g.one('Mul', [g.matMulTransB(grouped, keys), scaling]); // eager: scale after QKᵀ
    const probs = g.one('Softmax', [g.one('Add', [scores, maskByType[type]])], { axis: { i: -1 } });
    const context = g.one('Reshape', [g.one('MatMul', [probs, values]), ungroupedShape]); // [B,nH,T,D]
    const merged = g.one('Reshape', [g.one('Transpose', [context], { perm: { ints: [0, 2, 1, 3] } }), mergedShape]); // [B,T,nH·D]
    return g.matMulTransB(merged, weight(n.o_proj));
  };

  const geluC = g.constFloat([Math.sqrt(2 / Math.PI)], [], 'gelu_c');
  const geluA = g.constFloat([0.044715], [], 'gelu_a');
  const halfConst = g.constFloat([0.5], [], 'half');
  /** gelu_pytorch_tanh: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
  const geluTanh = (x: string): string => {
    const cube = g.one('Mul', [g.one('Mul', [x, x]), x]);
    const inner = g.one('Mul', [geluC, g.one('Add', [x, g.one('Mul', [geluA, cube])])]);
    return g.one('Mul', [g.one('Mul', [halfConst, x]), g.one('Add', [one, g.one('Tanh', [inner])])]);
  };

  /** Gemma3MLP: down(gelu_tanh(gate(x)) * up(x)). */
  const mlp = (x: string, layer: number): string => {
    const n = layerTensorNames(config.tensor_prefix, layer);
    const gate = geluTanh(g.matMulTransB(x, weight(n.gate_proj)));
    return g.matMulTransB(g.one('Mul', [gate, g.matMulTransB(x, weight(n.up_proj))]), weight(n.down_proj));
  };

  /** Gemma3DecoderLayer: two residual blocks, each with a norm before and after its sublayer. */
  const decoderLayer = (h: string, layer: number): string => {
    const n = layerTensorNames(config.tensor_prefix, layer);
    const afterAttention = g.one('Add', [h, rmsNorm(attention(rmsNorm(h, n.input_layernorm), layer), n.post_attention_layernorm)]);
    return g.one('Add', [afterAttention, rmsNorm(mlp(rmsNorm(afterAttention, n.pre_feedforward_layernorm), layer), n.post_feedforward_layernorm)]);
  };

  // Gemma3TextModel.
  const embedTokens = weight(embedTokensName(config.tensor_prefix));
  let h = g.one('Mul', [g.one('Gather', [embedTokens, inputIds]), g.constFloat([embedScale(config)], [], 'embed_scale')]); // [B,T,H]
  const index = g.one('Unsqueeze', [gatherIndex, lastAxis]); // [B,K,1]
  const gatherPositions = (x: string) => g.one('GatherND', [x, index], { batch_dims: { i: 1 } }); // [B,K,H]
  const hiddenLayers = new Set(options.hiddenLayers ?? []);
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    h = decoderLayer(h, layer);
    if (hiddenLayers.has(layer)) g.output(`hidden.${layer}`, gatherPositions(h), F, ['B', 'K', H]);
  }

  // Final norm on the gathered positions only, then the tied LM head (the unscaled embedding matrix).
  const logits = g.matMulTransB(rmsNorm(gatherPositions(h), finalNormName(config.tensor_prefix)), embedTokens); // [B,K,V]
  if (options.logits) g.output('logits', logits, F, ['B', 'K', V]);
  if (options.logprobs) {
    const logprobs = g.one('LogSoftmax', [logits], { axis: { i: -1 } });
    const targets = g.one('Unsqueeze', [g.input('target_ids', I64, ['B', 'K']), lastAxis]);
    const picked = g.one('Squeeze', [g.one('GatherElements', [logprobs, targets], { axis: { i: 2 } }), lastAxis]);
    g.output('target_logprobs', picked, F, ['B', 'K']);
    const [values, ids] = g.op('TopK', [logprobs, g.constInt64([options.logprobs.topK], [1], 'k')], { axis: { i: -1 } }, { outputs: 2 });
    g.output('topk_logprobs', values!, F, ['B', 'K', options.logprobs.topK]);
    g.output('topk_ids', ids!, I64, ['B', 'K', options.logprobs.topK]);
  }
  return g.toBytes('gemma3_text_decoder');
}
