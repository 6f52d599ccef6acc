import { describe, expect, it } from 'vitest';
import { ConfigError, parseGemma3Config } from '../../engine/config.ts';

// The hub's 4B config.json (gemma3.md §1.2): sparse text_config.
const HUB_4B = {
  architectures: ['Gemma3ForConditionalGeneration'],
  boi_token_index: 255999,
  eoi_token_index: 256000,
  eos_token_id: [1, 106],
  image_token_index: 262144,
  initializer_range: 0.02,
  mm_tokens_per_image: 256,
  model_type: 'gemma3',
  text_config: {
    hidden_size: 2560,
    intermediate_size: 10240,
    model_type: 'gemma3_text',
    num_hidden_layers: 34,
    rope_scaling: { factor: 8.0, rope_type: 'linear' },
    sliding_window: 1024,
  },
  torch_dtype: 'bfloat16',
  transformers_version: '4.50.0.dev0',
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

const HUB_1B = {
  architectures: ['Gemma3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  attn_logit_softcapping: null,
  bos_token_id: 2,
  cache_implementation: 'hybrid',
  eos_token_id: [1, 106],
  final_logit_softcapping: null,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  hidden_size: 1152,
  initializer_range: 0.02,
  intermediate_size: 6912,
  max_position_embeddings: 32768,
  model_type: 'gemma3_text',
  num_attention_heads: 4,
  num_hidden_layers: 26,
  num_key_value_heads: 1,
  pad_token_id: 0,
  query_pre_attn_scalar: 256,
  rms_norm_eps: 1e-6,
  rope_local_base_freq: 10000,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: 512,
  sliding_window_pattern: 6,
  torch_dtype: 'bfloat16',
  transformers_version: '4.50.0.dev0',
  use_cache: true,
  vocab_size: 262144,
};

describe('parseGemma3Config', () => {
  it('fills the 4B sparse text_config with Gemma3TextConfig defaults', () => {
    const c = parseGemma3Config(HUB_4B);
    expect(c.tensor_prefix).toBe('language_model.model.');
    expect([c.hidden_size, c.intermediate_size, c.num_hidden_layers]).toEqual([2560, 10240, 34]);
    expect([c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.vocab_size]).toEqual([8, 4, 256, 262208]);
    expect([c.rope_theta, c.rope_local_base_freq, c.rope_linear_factor, c.sliding_window]).toEqual([1e6, 1e4, 8, 1024]);
    expect(c.max_position_embeddings).toBe(131072);
    expect(c.eos_token_id).toEqual([1, 106]);
    const global = c.layer_types.flatMap((t, i) => (t === 'full_attention' ? [i] : []));
    expect(global).toEqual([5, 11, 17, 23, 29]);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads the 1B config as is', () => {
    const c = parseGemma3Config(HUB_1B);
    expect(c.tensor_prefix).toBe('model.');
    expect([c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.vocab_size, c.rope_linear_factor]).toEqual([
      1152, 4, 1, 262144, 1,
    ]);
    expect(c.layer_types.filter((t) => t === 'full_attention').length).toBe(4);
  });

  it('prefers explicit layer_types (transformers ≥ 4.53 saves)', () => {
    const layer_types = Array.from({ length: 26 }, (_, i) => (i === 0 ? 'full_attention' : 'sliding_attention'));
    expect(parseGemma3Config({ ...HUB_1B, layer_types }).layer_types[0]).toBe('full_attention');
  });

  it('lists every problem at once', () => {
    try {
      parseGemma3Config({
        ...HUB_1B,
        hidden_size: -1,
        num_key_value_heads: 3,
        final_logit_softcapping: 30,
        rope_scaling: { rope_type: 'yarn', factor: 2 },
      });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      expect(problems).toMatch(/hidden_size must be a positive integer/);
      expect(problems).toMatch(/num_attention_heads \(4\) must be a multiple of num_key_value_heads \(3\)/);
      expect(problems).toMatch(/final_logit_softcapping is set/);
      expect(problems).toMatch(/rope_scaling type "yarn" is not supported/);
    }
  });

  it('refuses an unknown architecture', () => {
    expect(() => parseGemma3Config({ architectures: ['LlamaForCausalLM'] })).toThrow(
      /expected Gemma3ForCausalLM or Gemma3ForConditionalGeneration/,
    );
  });
});
