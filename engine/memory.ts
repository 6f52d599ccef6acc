// What an engine holds and what one call adds to it: the figures the memory gate (taskset/memory-gate.ts) and the
// evaluator's admission use, checked against measured peaks in test/engine/memory.test.ts.
import os from 'node:os';
import type { Gemma3TextConfig, LayerType } from './config.ts';
import { BLOCK_ELEMENTS, VOCAB_CHUNK } from './head.ts';
import { expectedTextTensors } from './names.ts';
import { CHUNK_ROWS } from './settings.ts';

/** Bytes of the weights an engine holds: every text tensor in BF16. */
export function textWeightBytes(config: Gemma3TextConfig): number {
  let params = 0;
  for (const shape of expectedTextTensors(config).values()) params += shape.reduce((a, b) => a * b, 1);
  return 2 * params;
}

/**
 * The most memory one call adds (docs/engine.md, "Memory per call"): its KV cache, one chunk's activations (the projections'
 * inputs and outputs, attention scores, masks and probabilities over the cache), the products' scratch and one
 * head block.
 */
export function callMemoryBytes(
  config: Gemma3TextConfig,
  call: { batch: number; tokens: number; chunkRows?: number },
): { cache: number; chunk: number; total: number } {
  const {
    hidden_size: H,
    intermediate_size: I,
    num_attention_heads: nH,
    num_key_value_heads: nKV,
    head_dim: D,
  } = config;
  const { batch: B, tokens } = call;
  const perChunk = Math.max(1, Math.floor((call.chunkRows ?? CHUNK_ROWS) / B));
  const T = Math.min(perChunk, tokens);
  const M = B * T;
  const slots = (type: LayerType) => (type === 'full_attention' ? tokens : Math.min(tokens, config.sliding_window));
  const cache = config.layer_types.reduce((sum, type) => sum + 2 * 4 * B * nKV * slots(type) * D, 0);
  const S = tokens + T; // the widest key range: a full layer's cache and the chunk
  const rows = 4 * M * (10 * H + 4 * nH * D + 6 * nKV * D + 3 * I); // JS and graph tensors of one layer
  // Scores of the cache and of the chunk, joined, masked, softmax and its two parts; the masks of both layer types.
  const attention = 4 * B * nH * T * S * 7;
  // One head block: BLOCK_ELEMENTS, or one vocabulary chunk wide for inspections of more rows than that holds.
  const head = 4 * Math.max(BLOCK_ELEMENTS, tokens * VOCAB_CHUNK);
  // The products' scratch (engine/native/products.h): x once, float32, its k padded to whole blocks of 32 (AMX's BF16
  // tiles of it take half that), and per pool thread a panel of 256 k × 32 outputs and the accumulators of its rows.
  const widest = Math.ceil(Math.max(H, I, nH * D) / 32) * 32;
  const products = 4 * M * widest + os.availableParallelism() * (4 * 256 * 32 + 4 * M * 32);
  const chunk = rows + attention + head + products;
  return { cache, chunk, total: cache + chunk };
}

/**
 * What continuous batching holds (generate.ts): each row in flight its own KV cache for `tokens`, its decode step's
 * activations and its logits (`perRow`), and one sequence's prefill chunk at a time (`fixed`).
 */
export function continuousMemoryBytes(
  config: Gemma3TextConfig,
  call: { tokens: number; chunkRows?: number },
): { perRow: number; fixed: number } {
  const { hidden_size: H, intermediate_size: I, num_attention_heads: nH, num_key_value_heads: nKV } = config;
  const D = config.head_dim;
  const step = callMemoryBytes(config, { batch: 1, tokens: call.tokens, chunkRows: 1 });
  const activations = 4 * (10 * H + 4 * nH * D + 6 * nKV * D + 3 * I) + 4 * nH * (call.tokens + 1) * 7;
  const perRow = step.cache + activations + 4 * config.vocab_size;
  return { perRow, fixed: callMemoryBytes(config, { batch: 1, tokens: call.tokens, chunkRows: call.chunkRows }).chunk };
}
