// Checkpoint tensor names of the Gemma 3 text decoder, built here and nowhere else (gemma3.md §2).
// 1B: "model.*"; 4B: "language_model.model.*" (the hub's pre-v4.52 names). The LM head is tied to embed_tokens
// and is not stored.
import type { Gemma3TextConfig } from './config.ts';

export type LayerTensorNames = {
  input_layernorm: string;
  q_proj: string;
  k_proj: string;
  v_proj: string;
  o_proj: string;
  q_norm: string;
  k_norm: string;
  post_attention_layernorm: string;
  pre_feedforward_layernorm: string;
  gate_proj: string;
  up_proj: string;
  down_proj: string;
  post_feedforward_layernorm: string;
};

export function layerTensorNames(prefix: string, i: number): LayerTensorNames {
  const layer = `${prefix}layers.${i}.`;
  return {
    input_layernorm: `${layer}input_layernorm.weight`,
    q_proj: `${layer}self_attn.q_proj.weight`,
    k_proj: `${layer}self_attn.k_proj.weight`,
    v_proj: `${layer}self_attn.v_proj.weight`,
    o_proj: `${layer}self_attn.o_proj.weight`,
    q_norm: `${layer}self_attn.q_norm.weight`,
    k_norm: `${layer}self_attn.k_norm.weight`,
    post_attention_layernorm: `${layer}post_attention_layernorm.weight`,
    pre_feedforward_layernorm: `${layer}pre_feedforward_layernorm.weight`,
    gate_proj: `${layer}mlp.gate_proj.weight`,
    up_proj: `${layer}mlp.up_proj.weight`,
    down_proj: `${layer}mlp.down_proj.weight`,
    post_feedforward_layernorm: `${layer}post_feedforward_layernorm.weight`,
  };
}

export function embedTokensName(prefix: string): string {
  return `${prefix}embed_tokens.weight`;
}

export function finalNormName(prefix: string): string {
  return `${prefix}norm.weight`;
}

/** Tensors that share storage with another; the key is never stored or written on its own. */
export function tiedAliases(config: Gemma3TextConfig): Record<string, string> {
  // The LM head is the embedding matrix (tie_word_embeddings); 4B keeps it under language_model.lm_head.
  const head = config.tensor_prefix === 'model.' ? 'lm_head.weight' : 'language_model.lm_head.weight';
  return { [head]: embedTokensName(config.tensor_prefix) };
}

/** Every text-decoder tensor with its expected shape, in checkpoint order. */
export function expectedTextTensors(config: Gemma3TextConfig): Map<string, number[]> {
  const {
    hidden_size: H,
    intermediate_size: I,
    num_attention_heads: nH,
    num_key_value_heads: nKV,
    head_dim: D,
  } = config;
  const shapes = new Map<string, number[]>();
  shapes.set(embedTokensName(config.tensor_prefix), [config.vocab_size, H]);
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const n = layerTensorNames(config.tensor_prefix, i);
    shapes.set(n.input_layernorm, [H]);
    shapes.set(n.q_proj, [nH * D, H]);
    shapes.set(n.k_proj, [nKV * D, H]);
    shapes.set(n.v_proj, [nKV * D, H]);
    shapes.set(n.o_proj, [H, nH * D]);
    shapes.set(n.q_norm, [D]);
    shapes.set(n.k_norm, [D]);
    shapes.set(n.post_attention_layernorm, [H]);
    shapes.set(n.pre_feedforward_layernorm, [H]);
    shapes.set(n.gate_proj, [I, H]);
    shapes.set(n.up_proj, [I, H]);
    shapes.set(n.down_proj, [H, I]);
    shapes.set(n.post_feedforward_layernorm, [H]);
  }
  shapes.set(finalNormName(config.tensor_prefix), [H]);
  return shapes;
}

/** Layer index of a text-decoder tensor name, or undefined for embeddings, final norm and non-text tensors. */
export function layerOf(name: string): number | undefined {
  const match = /\.layers\.(\d+)\./.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** Vision tower and projector of the 4B: listed in the manifest, never written. */
export function isVisionTensor(name: string): boolean {
  return name.startsWith('vision_tower.') || name.startsWith('multi_modal_projector.');
}

/** The kinds of tensor the manifest names. */
export const TENSOR_KINDS = ['embedding', 'attention', 'mlp', 'norm', 'vision', 'other'] as const;
export type TensorKind = (typeof TENSOR_KINDS)[number];

/** Kind of a tensor from its checkpoint name (what the manifest's `kind` column and filter say). */
export function kindOf(name: string): TensorKind {
  if (isVisionTensor(name)) return 'vision';
  if (name.endsWith('embed_tokens.weight')) return 'embedding';
  if (/(layernorm|_norm|\.norm)\.weight$/.test(name)) return 'norm';
  if (name.includes('.self_attn.')) return 'attention';
  if (name.includes('.mlp.')) return 'mlp';
  return 'other';
}
