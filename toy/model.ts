// The Gemma 3 text decoder written once more, in TensorFlow.js, so that it can be trained (gemma3.md §3): scaled
// embedding, sandwich RMSNorms with (1 + w), q/k norms, RoPE per layer type, grouped-query attention with a causal
// mask, GeGLU-tanh MLP, final norm, tied head. Training sequences are shorter than the sliding window, so a local
// layer differs from a global one only in its RoPE base. The weights are tf.Variables under the checkpoint's names.
import * as tf from '@tensorflow/tfjs-core';
import {
  embedTokensName,
  expectedTextTensors,
  finalNormName,
  type Gemma3TextConfig,
  layerTensorNames,
} from '../engine/index.ts';

export type ToyWeights = Map<string, tf.Variable>;

/** Variables from float32 arrays keyed by checkpoint name (shapes from the config). */
export function createWeights(
  config: Gemma3TextConfig,
  values: (name: string, shape: number[]) => Float32Array,
): ToyWeights {
  const weights: ToyWeights = new Map();
  for (const [name, shape] of expectedTextTensors(config)) {
    weights.set(
      name,
      tf.tidy(() => tf.variable(tf.tensor(values(name, shape), shape), true, name)),
    );
  }
  return weights;
}

export function disposeWeights(weights: ToyWeights): void {
  for (const v of weights.values()) v.dispose();
}

function rmsNorm(x: tf.Tensor, w: tf.Tensor, eps: number): tf.Tensor {
  const variance = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(variance, eps))), tf.add(w, 1));
}

/** Swaps the last two axes of a 2-D or 3-D tensor. */
function swapLast(x: tf.Tensor): tf.Tensor {
  return tf.transpose(x, x.rank === 2 ? [1, 0] : [0, 2, 1]);
}

/**
 * a · b (2-D, or batched 3-D) whose gradients are plain products too. The WebAssembly backend runs a product with a
 * transposed operand 5–8× slower than a plain one (measured: 1.7 vs 8 GFLOP/s), and tf.matMul's own gradient uses
 * transposed operands; an explicit transpose is cheap next to that.
 */
const matMul = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
  const [a, b, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
  save([a, b]);
  return {
    value: tf.matMul(a, b),
    gradFunc: (dy: tf.Tensor, [a, b]: tf.Tensor[]) => [tf.matMul(dy, swapLast(b!)), tf.matMul(swapLast(a!), dy)],
  };
}) as (a: tf.Tensor, b: tf.Tensor) => tf.Tensor;

/** x [..., in] · Wᵀ with W stored [out, in] as in the checkpoint. */
function linear(x: tf.Tensor, w: tf.Tensor): tf.Tensor {
  const shape = x.shape;
  const y = matMul(tf.reshape(x, [-1, shape[shape.length - 1]!]), swapLast(w));
  return tf.reshape(y, [...shape.slice(0, -1), w.shape[0]!]);
}

function geluTanh(x: tf.Tensor): tf.Tensor {
  const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.mul(x, tf.mul(x, x)))));
  return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
}

/** cos and sin tables [1, T, 1, D] for rotate_half RoPE over the full head dim (positions 0…T−1). */
function ropeTables(T: number, D: number, base: number, factor: number): [tf.Tensor, tf.Tensor] {
  const cos = new Float32Array(T * D);
  const sin = new Float32Array(T * D);
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < D / 2; i++) {
      const angle = t * (1 / base ** ((2 * i) / D) / factor);
      cos[t * D + i] = cos[t * D + i + D / 2] = Math.cos(angle);
      sin[t * D + i] = sin[t * D + i + D / 2] = Math.sin(angle);
    }
  }
  return [tf.tensor(cos, [1, T, 1, D]), tf.tensor(sin, [1, T, 1, D])];
}

function applyRope(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  const D = x.shape[3]!;
  const [x1, x2] = tf.split(x, [D / 2, D / 2], 3);
  return tf.add(tf.mul(x, cos), tf.mul(tf.concat([tf.neg(x2!), x1!], 3), sin));
}

/**
 * Rows `indices` of a matrix [N, H]. Its gradient is summed into rows in JS: tf.gather's own gradient needs
 * UnsortedSegmentSum, which the WebAssembly backend does not have.
 */
function gatherRows(x: tf.Tensor2D, indices: Int32Array): tf.Tensor2D {
  const [N, H] = x.shape;
  const gather = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => ({
    value: tf.gather(args[0] as tf.Tensor, tf.tensor1d(indices, 'int32')),
    gradFunc: (dy: tf.Tensor) => {
      const upstream = dy.dataSync();
      const grad = new Float32Array(N * H);
      for (let r = 0; r < indices.length; r++) {
        const from = r * H;
        const to = indices[r]! * H;
        for (let i = 0; i < H; i++) grad[to + i]! += upstream[from + i]!;
      }
      return tf.tensor2d(grad, [N, H]);
    },
  }));
  return gather(x) as tf.Tensor2D;
}

/** Additive causal mask [T, T]: 0 where a query may attend, −1e9 after it. */
function causalMask(T: number): tf.Tensor {
  const mask = new Float32Array(T * T);
  for (let q = 0; q < T; q++) for (let k = q + 1; k < T; k++) mask[q * T + k] = -1e9;
  return tf.tensor(mask, [T, T]);
}

/**
 * Final hidden states [B·T, H] (after the final norm) of right-padded sequences `ids` (B rows of T). Padding sits after
 * each sequence, so the causal mask alone keeps it out of every real position.
 */
export function hiddenStates(
  config: Gemma3TextConfig,
  weights: ToyWeights,
  ids: Int32Array,
  B: number,
  T: number,
): tf.Tensor2D {
  const { hidden_size: H, num_attention_heads: nH, num_key_value_heads: nKV, head_dim: D } = config;
  const w = (name: string) => weights.get(name)!;
  const eps = config.rms_norm_eps;
  const group = nH / nKV;
  const mask = causalMask(T);
  const tables = new Map<string, [tf.Tensor, tf.Tensor]>();
  const scale = Math.fround(Math.sqrt(H));

  let h: tf.Tensor = tf.reshape(
    tf.mul(gatherRows(w(embedTokensName(config.tensor_prefix)) as tf.Tensor2D, ids), scale),
    [B, T, H],
  );
  for (let layer = 0; layer < config.num_hidden_layers; layer++) {
    const n = layerTensorNames(config.tensor_prefix, layer);
    const sliding = config.layer_types[layer] === 'sliding_attention';
    if (sliding && T > config.sliding_window)
      throw new Error(`toy model: sequence of ${T} tokens exceeds the sliding window ${config.sliding_window}`);
    const base = sliding ? config.rope_local_base_freq : config.rope_theta;
    const factor = sliding ? 1 : config.rope_linear_factor;
    const key = `${base}/${factor}`;
    if (!tables.has(key)) tables.set(key, ropeTables(T, D, base, factor));
    const [cos, sin] = tables.get(key)!;

    const x = rmsNorm(h, w(n.input_layernorm), eps);
    const q = applyRope(rmsNorm(tf.reshape(linear(x, w(n.q_proj)), [B, T, nH, D]), w(n.q_norm), eps), cos, sin);
    const k = applyRope(rmsNorm(tf.reshape(linear(x, w(n.k_proj)), [B, T, nKV, D]), w(n.k_norm), eps), cos, sin);
    const v = tf.reshape(linear(x, w(n.v_proj)), [B, T, nKV, D]);
    // Query heads grouped by their key-value head (head h uses kv head ⌊h / group⌋, as HF's repeat_kv).
    const qg = tf.reshape(tf.transpose(tf.reshape(q, [B, T, nKV, group, D]), [0, 2, 3, 1, 4]), [B * nKV, group * T, D]);
    const kg = tf.reshape(tf.transpose(k, [0, 2, 1, 3]), [B * nKV, T, D]);
    const vg = tf.reshape(tf.transpose(v, [0, 2, 1, 3]), [B * nKV, T, D]);
    const scores = tf.add(
      tf.reshape(tf.mul(matMul(qg, swapLast(kg)), config.query_pre_attn_scalar ** -0.5), [B * nKV, group, T, T]),
      mask,
    );
    const probs = tf.reshape(tf.softmax(scores), [B * nKV, group * T, T]);
    const context = tf.reshape(tf.transpose(tf.reshape(matMul(probs, vg), [B, nKV, group, T, D]), [0, 3, 1, 2, 4]), [
      B,
      T,
      nH * D,
    ]);
    h = tf.add(h, rmsNorm(linear(context, w(n.o_proj)), w(n.post_attention_layernorm), eps));

    const y = rmsNorm(h, w(n.pre_feedforward_layernorm), eps);
    const mlp = linear(tf.mul(geluTanh(linear(y, w(n.gate_proj))), linear(y, w(n.up_proj))), w(n.down_proj));
    h = tf.add(h, rmsNorm(mlp, w(n.post_feedforward_layernorm), eps));
  }
  return tf.reshape(rmsNorm(h, w(finalNormName(config.tensor_prefix)), eps), [B * T, H]) as tf.Tensor2D;
}

/** A right-padded batch: `ids` holds B rows of T token ids. */
export type Batch = { ids: Int32Array; B: number; T: number };

/** Logits [N, vocab] at the flat positions `rows` (indices into B·T) of the batch: the tied head only where needed. */
export function logitsAt(config: Gemma3TextConfig, weights: ToyWeights, batch: Batch, rows: Int32Array): tf.Tensor2D {
  const hidden = gatherRows(hiddenStates(config, weights, batch.ids, batch.B, batch.T), rows);
  return matMul(hidden, swapLast(weights.get(embedTokensName(config.tensor_prefix))!)) as tf.Tensor2D;
}

/** Mean cross-entropy of `targets` at `rows`, and how many of them the argmax gets right. */
export function lossAt(
  config: Gemma3TextConfig,
  weights: ToyWeights,
  batch: Batch,
  rows: Int32Array,
  targets: tf.Tensor1D,
): { loss: tf.Scalar; correct: tf.Scalar } {
  const logits = logitsAt(config, weights, batch, rows);
  const logProbs = tf.logSoftmax(logits);
  const picked = tf.sum(tf.mul(logProbs, tf.oneHot(targets, config.vocab_size)), -1);
  const correct = tf.sum(tf.cast(tf.equal(tf.argMax(logits, -1), targets), 'float32')) as tf.Scalar;
  return { loss: tf.neg(tf.mean(picked)) as tf.Scalar, correct };
}
