// config.json of a Gemma 3 checkpoint → one typed, fully defaulted, frozen text config.
// 1B: Gemma3ForCausalLM, fields at top level. 4B: Gemma3ForConditionalGeneration, a sparse `text_config` whose
// missing fields take Gemma3TextConfig's defaults (transformers configuration_gemma3.py; gemma3.md §1.2).
// Field names stay exactly as in config.json.

export type LayerType = 'sliding_attention' | 'full_attention';

export type Gemma3TextConfig = Readonly<{
  architecture: 'Gemma3ForCausalLM' | 'Gemma3ForConditionalGeneration';
  /** Prefix of the text decoder's tensors: "model." (1B) or "language_model.model." (4B). */
  tensor_prefix: string;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  vocab_size: number;
  rope_theta: number;
  rope_local_base_freq: number;
  /** Linear scaling factor of the global (full_attention) layers' RoPE; 1 when unscaled. */
  rope_linear_factor: number;
  sliding_window: number;
  layer_types: readonly LayerType[];
  query_pre_attn_scalar: number;
  rms_norm_eps: number;
  max_position_embeddings: number;
  hidden_activation: 'gelu_pytorch_tanh';
  tie_word_embeddings: boolean;
  bos_token_id: number;
  pad_token_id: number;
  eos_token_id: readonly number[];
}>;

/** Gemma3TextConfig.__init__ defaults (transformers configuration_gemma3.py, v4.50 and main). */
export const TEXT_CONFIG_DEFAULTS = Object.freeze({
  vocab_size: 262_208,
  hidden_size: 2304,
  intermediate_size: 9216,
  num_hidden_layers: 26,
  num_attention_heads: 8,
  num_key_value_heads: 4,
  head_dim: 256,
  hidden_activation: 'gelu_pytorch_tanh',
  max_position_embeddings: 131_072,
  rms_norm_eps: 1e-6,
  pad_token_id: 0,
  eos_token_id: 1,
  bos_token_id: 2,
  tie_word_embeddings: true,
  rope_theta: 1_000_000,
  rope_scaling: null,
  rope_local_base_freq: 10_000,
  sliding_window: 4096,
  sliding_window_pattern: 6,
  query_pre_attn_scalar: 256,
  final_logit_softcapping: null,
  attn_logit_softcapping: null,
  attention_bias: false,
});

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`config.json is invalid:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Json = Record<string, unknown>;

export function parseGemma3Config(raw: unknown): Gemma3TextConfig {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null) throw new ConfigError(['not a JSON object']);
  const top = raw as Json;
  const architecture = Array.isArray(top.architectures) ? top.architectures[0] : undefined;
  let text: Json;
  let tensorPrefix: string;
  if (architecture === 'Gemma3ForCausalLM') {
    text = top;
    tensorPrefix = 'model.';
  } else if (architecture === 'Gemma3ForConditionalGeneration') {
    if (typeof top.text_config !== 'object' || top.text_config === null)
      throw new ConfigError(['Gemma3ForConditionalGeneration without text_config']);
    text = top.text_config as Json;
    tensorPrefix = 'language_model.model.';
  } else {
    throw new ConfigError([
      `architectures[0] is ${JSON.stringify(architecture)}; expected Gemma3ForCausalLM or Gemma3ForConditionalGeneration`,
    ]);
  }
  const field = (name: keyof typeof TEXT_CONFIG_DEFAULTS): unknown =>
    name in text ? text[name] : TEXT_CONFIG_DEFAULTS[name];
  const positiveInt = (name: keyof typeof TEXT_CONFIG_DEFAULTS): number => {
    const value = field(name);
    if (!Number.isSafeInteger(value) || (value as number) <= 0)
      problems.push(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
    return value as number;
  };
  const positiveNumber = (name: keyof typeof TEXT_CONFIG_DEFAULTS): number => {
    const value = field(name);
    if (typeof value !== 'number' || !(value > 0))
      problems.push(`${name} must be a positive number, got ${JSON.stringify(value)}`);
    return value as number;
  };

  const hidden_size = positiveInt('hidden_size');
  const intermediate_size = positiveInt('intermediate_size');
  const num_hidden_layers = positiveInt('num_hidden_layers');
  const num_attention_heads = positiveInt('num_attention_heads');
  const num_key_value_heads = positiveInt('num_key_value_heads');
  const head_dim = positiveInt('head_dim');
  const vocab_size = positiveInt('vocab_size');
  const sliding_window = positiveInt('sliding_window');
  const max_position_embeddings = positiveInt('max_position_embeddings');
  const rope_theta = positiveNumber('rope_theta');
  const rope_local_base_freq = positiveNumber('rope_local_base_freq');
  const query_pre_attn_scalar = positiveNumber('query_pre_attn_scalar');
  const rms_norm_eps = positiveNumber('rms_norm_eps');
  if (num_attention_heads % num_key_value_heads !== 0) {
    problems.push(
      `num_attention_heads (${num_attention_heads}) must be a multiple of num_key_value_heads (${num_key_value_heads})`,
    );
  }
  if (head_dim % 2 !== 0) problems.push(`head_dim (${head_dim}) must be even for RoPE`);
  const activation = field('hidden_activation');
  if (activation !== 'gelu_pytorch_tanh')
    problems.push(`hidden_activation ${JSON.stringify(activation)} is not supported (gelu_pytorch_tanh)`);
  for (const name of ['final_logit_softcapping', 'attn_logit_softcapping'] as const) {
    if (field(name) !== null && field(name) !== undefined)
      problems.push(`${name} is set; Gemma 3 has none and this engine does not apply it`);
  }
  if (field('attention_bias') === true) problems.push('attention_bias is true; Gemma 3 has no biases');
  const tie = field('tie_word_embeddings');
  if (tie !== true) problems.push('tie_word_embeddings must be true (the LM head is the embedding matrix)');

  const rope_linear_factor = parseRopeScaling(field('rope_scaling'), problems);
  const layer_types = parseLayerTypes(text, num_hidden_layers, problems);
  const eos = top.eos_token_id ?? field('eos_token_id');
  const eos_token_id = Array.isArray(eos) ? eos : [eos];
  if (!eos_token_id.every((id) => Number.isSafeInteger(id)))
    problems.push(`eos_token_id ${JSON.stringify(eos)} is not an id or list of ids`);

  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze({
    architecture,
    tensor_prefix: tensorPrefix,
    hidden_size,
    intermediate_size,
    num_hidden_layers,
    num_attention_heads,
    num_key_value_heads,
    head_dim,
    vocab_size,
    rope_theta,
    rope_local_base_freq,
    rope_linear_factor,
    sliding_window,
    layer_types: Object.freeze(layer_types),
    query_pre_attn_scalar,
    rms_norm_eps,
    max_position_embeddings,
    hidden_activation: 'gelu_pytorch_tanh',
    tie_word_embeddings: true,
    bos_token_id: field('bos_token_id') as number,
    pad_token_id: field('pad_token_id') as number,
    eos_token_id: Object.freeze(eos_token_id as number[]),
  });
}

function parseRopeScaling(value: unknown, problems: string[]): number {
  if (value === null || value === undefined) return 1;
  const scaling = value as { rope_type?: unknown; type?: unknown; factor?: unknown };
  const type = scaling.rope_type ?? scaling.type;
  if (type === 'default') return 1;
  if (type !== 'linear') {
    problems.push(`rope_scaling type ${JSON.stringify(type)} is not supported (linear or default)`);
    return 1;
  }
  if (typeof scaling.factor !== 'number' || !(scaling.factor > 0)) {
    problems.push(`rope_scaling.factor must be a positive number, got ${JSON.stringify(scaling.factor)}`);
    return 1;
  }
  return scaling.factor;
}

/** Explicit `layer_types` (v4.53+ saves) or the pattern rule: layer i is global iff (i + 1) % pattern == 0. */
function parseLayerTypes(text: Json, layers: number, problems: string[]): LayerType[] {
  if (Array.isArray(text.layer_types)) {
    const types = text.layer_types as unknown[];
    if (types.length !== layers) problems.push(`layer_types has ${types.length} entries for ${layers} layers`);
    if (!types.every((t) => t === 'sliding_attention' || t === 'full_attention'))
      problems.push('layer_types entries must be sliding_attention or full_attention');
    return types as LayerType[];
  }
  const pattern = (text.sliding_window_pattern ??
    text._sliding_window_pattern ??
    TEXT_CONFIG_DEFAULTS.sliding_window_pattern) as number;
  if (!Number.isSafeInteger(pattern) || pattern <= 0) {
    problems.push(`sliding_window_pattern must be a positive integer, got ${JSON.stringify(pattern)}`);
    return [];
  }
  return Array.from({ length: layers }, (_, i) => ((i + 1) % pattern === 0 ? 'full_attention' : 'sliding_attention'));
}
