// A plain TypeScript Gemma 3 forward pass, float32 storage, no cache, one sequence: the tests' oracle for the ONNX
// graph. Written straight from gemma3.md §3 (HF modeling_gemma3.py), sharing no code with engine except the
// tensor names and the RoPE/embedding-scale constants, which are checked against HF's values separately.
import {
  bf16ToF32,
  type Checkpoint,
  checkpointSource,
  embedTokensName,
  finalNormName,
  layerTensorNames,
  type WeightSource,
} from '../../engine/index.ts';

/** y[t, o] = Σ_i x[t, i] · W[o, i]  (Linear, W stored [out, in]). */
function linear(x: Float32Array, T: number, inDim: number, W: Float32Array, outDim: number): Float32Array {
  const y = new Float32Array(T * outDim);
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < outDim; o++) {
      let sum = 0;
      for (let i = 0; i < inDim; i++) sum += x[t * inDim + i]! * W[o * inDim + i]!;
      y[t * outDim + o] = sum;
    }
  }
  return y;
}

/** Gemma3RMSNorm over rows of length n: x / sqrt(mean(x²) + eps) · (1 + w). */
function rmsNorm(x: Float32Array, n: number, w: Float32Array, eps: number): Float32Array {
  const y = new Float32Array(x.length);
  for (let row = 0; row < x.length / n; row++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += x[row * n + i]! ** 2;
    const scale = 1 / Math.sqrt(sum / n + eps);
    for (let i = 0; i < n; i++) y[row * n + i] = x[row * n + i]! * scale * (1 + w[i]!);
  }
  return y;
}

function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}

/** Rotate each head (rows of D) in place with rotate_half over the full head dim. */
function applyRope(x: Float32Array, T: number, heads: number, D: number, base: number, factor: number): void {
  const half = D / 2;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < heads; h++) {
      const off = (t * heads + h) * D;
      const rotated = new Float32Array(D);
      for (let i = 0; i < half; i++) {
        const invFreq = 1 / base ** ((2 * i) / D) / factor;
        const angle = t * invFreq;
        const cos = Math.cos(angle);
        const sin = Math.sin(angle);
        const x1 = x[off + i]!;
        const x2 = x[off + half + i]!;
        rotated[i] = x1 * cos - x2 * sin;
        rotated[half + i] = x2 * cos + x1 * sin;
      }
      x.set(rotated, off);
    }
  }
}

/** Logits [T, vocab] of one sequence (positions 0…T−1). */
export function referenceForward(
  checkpoint: Checkpoint,
  ids: number[],
  weights: WeightSource = checkpointSource(checkpoint),
): Float32Array {
  const weight = (name: string) => bf16ToF32(weights.bf16(name)); // the oracle computes on float32, one tensor at a time
  const c = checkpoint.config;
  const {
    hidden_size: H,
    num_attention_heads: nH,
    num_key_value_heads: nKV,
    head_dim: D,
    intermediate_size: I,
    vocab_size: V,
  } = c;
  const T = ids.length;
  const E = weight(embedTokensName(c.tensor_prefix));
  const scale = Math.fround(Math.sqrt(H));
  let h = new Float32Array(T * H);
  ids.forEach((id, t) => {
    for (let i = 0; i < H; i++) h[t * H + i] = E[id * H + i]! * scale;
  });

  for (let layer = 0; layer < c.num_hidden_layers; layer++) {
    const n = layerTensorNames(c.tensor_prefix, layer);
    const sliding = c.layer_types[layer] === 'sliding_attention';
    const base = sliding ? c.rope_local_base_freq : c.rope_theta;
    const factor = sliding ? 1 : c.rope_linear_factor;

    const x = rmsNorm(h, H, weight(n.input_layernorm), c.rms_norm_eps);
    const q = rmsNorm(linear(x, T, H, weight(n.q_proj), nH * D), D, weight(n.q_norm), c.rms_norm_eps);
    const k = rmsNorm(linear(x, T, H, weight(n.k_proj), nKV * D), D, weight(n.k_norm), c.rms_norm_eps);
    const v = linear(x, T, H, weight(n.v_proj), nKV * D);
    applyRope(q, T, nH, D, base, factor);
    applyRope(k, T, nKV, D, base, factor);

    const context = new Float32Array(T * nH * D);
    const scaling = c.query_pre_attn_scalar ** -0.5;
    for (let head = 0; head < nH; head++) {
      const kvHead = Math.floor(head / (nH / nKV));
      for (let tq = 0; tq < T; tq++) {
        const scores: number[] = [];
        for (let tk = 0; tk <= tq; tk++) {
          if (sliding && tq - tk >= c.sliding_window) {
            scores.push(-Infinity);
            continue;
          }
          let dot = 0;
          for (let d = 0; d < D; d++) dot += q[(tq * nH + head) * D + d]! * k[(tk * nKV + kvHead) * D + d]!;
          scores.push(dot * scaling);
        }
        const max = Math.max(...scores);
        const exps = scores.map((s) => Math.exp(s - max));
        const total = exps.reduce((a, b) => a + b, 0);
        for (let d = 0; d < D; d++) {
          let sum = 0;
          for (let tk = 0; tk <= tq; tk++) sum += (exps[tk]! / total) * v[(tk * nKV + kvHead) * D + d]!;
          context[(tq * nH + head) * D + d] = sum;
        }
      }
    }
    const attn = rmsNorm(
      linear(context, T, nH * D, weight(n.o_proj), H),
      H,
      weight(n.post_attention_layernorm),
      c.rms_norm_eps,
    );
    for (let i = 0; i < h.length; i++) h[i] = h[i]! + attn[i]!;

    const y = rmsNorm(h, H, weight(n.pre_feedforward_layernorm), c.rms_norm_eps);
    const gate = linear(y, T, H, weight(n.gate_proj), I);
    const up = linear(y, T, H, weight(n.up_proj), I);
    for (let i = 0; i < gate.length; i++) gate[i] = geluTanh(gate[i]!) * up[i]!;
    const mlp = rmsNorm(
      linear(gate, T, I, weight(n.down_proj), H),
      H,
      weight(n.post_feedforward_layernorm),
      c.rms_norm_eps,
    );
    h = h.map((value, i) => value + mlp[i]!);
  }
  const final = rmsNorm(h, H, weight(finalNormName(c.tensor_prefix)), c.rms_norm_eps);
  return linear(final, T, H, E, V);
}
