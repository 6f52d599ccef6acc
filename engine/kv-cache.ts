// The KV cache of one engine call, in JS buffers: per layer, keys and values [B, nKV, slots, D] as the attention graph
// takes its past, and per layer type the position held in each slot of each sequence (−1: empty or padding, never
// attended). Full-attention layers keep every token (slot = padded time); sliding layers keep a ring of their window
// (slot = padded time mod window), which is all that any later query can see. Slot order does not matter to
// attention: the mask is built from positions.
import type { Gemma3TextConfig, LayerType } from './config.ts';

export class KvCache {
  private readonly keys: Float32Array[];
  private readonly values: Float32Array[];
  private readonly slotPositions: Record<LayerType, Int32Array>;
  readonly slots: Record<LayerType, number>;

  /** `length`: the padded tokens the call will hold at most (prompt + new tokens). */
  constructor(
    private readonly config: Gemma3TextConfig,
    readonly batch: number,
    length: number,
  ) {
    this.slots = { full_attention: length, sliding_attention: Math.min(length, config.sliding_window) };
    const { num_key_value_heads: nKV, head_dim: D } = config;
    const size = (layer: number) => batch * nKV * this.slots[config.layer_types[layer]!] * D;
    this.keys = config.layer_types.map((_, layer) => new Float32Array(size(layer)));
    this.values = config.layer_types.map((_, layer) => new Float32Array(size(layer)));
    this.slotPositions = {
      full_attention: new Int32Array(batch * this.slots.full_attention).fill(-1),
      sliding_attention: new Int32Array(batch * this.slots.sliding_attention).fill(-1),
    };
  }

  /** A copy holding the same keys, values and positions (the speed probe's rows, from one prefilled sequence). */
  copy(): KvCache {
    const copy = new KvCache(this.config, this.batch, this.slots.full_attention);
    this.keys.forEach((buffer, layer) => copy.keys[layer]!.set(buffer));
    this.values.forEach((buffer, layer) => copy.values[layer]!.set(buffer));
    for (const type of ['full_attention', 'sliding_attention'] as const)
      copy.slotPositions[type].set(this.slotPositions[type]);
    return copy;
  }

  /** Bytes held by the buffers (for the memory bound). */
  get bytes(): number {
    return [...this.keys, ...this.values].reduce((sum, buffer) => sum + buffer.byteLength, 0);
  }

  /** The past of a layer as the attention graph takes it: [B, nKV, slots, D] (no copy). */
  past(layer: number): { key: Float32Array; value: Float32Array; dims: number[] } {
    const type = this.config.layer_types[layer]!;
    return {
      key: this.keys[layer]!,
      value: this.values[layer]!,
      dims: [this.batch, this.config.num_key_value_heads, this.slots[type], this.config.head_dim],
    };
  }

  /** The positions held in a layer type's slots, [B, slots] (no copy: attendDecode reads them where they lie). */
  heldPositions(type: LayerType): Int32Array {
    return this.slotPositions[type];
  }

  /** key_positions [B, slots + T] for a chunk of T tokens: the slots' positions, then the chunk's own. */
  keyPositions(type: LayerType, chunkPositions: Int32Array, T: number): Int32Array {
    const slots = this.slots[type];
    const held = this.slotPositions[type];
    const out = new Int32Array(this.batch * (slots + T));
    for (let b = 0; b < this.batch; b++) {
      out.set(held.subarray(b * slots, (b + 1) * slots), b * (slots + T));
      out.set(chunkPositions.subarray(b * T, (b + 1) * T), b * (slots + T) + slots);
    }
    return out;
  }

  /** Copy a layer's present keys and values [B, nKV, T, D] for padded times start…start+T−1 into their slots. */
  store(layer: number, presentKey: Float32Array, presentValue: Float32Array, start: number, T: number): void {
    const type = this.config.layer_types[layer]!;
    const slots = this.slots[type];
    const { num_key_value_heads: nKV, head_dim: D } = this.config;
    const first = Math.max(0, T - slots); // a chunk longer than a ring keeps its last `slots` tokens
    for (const [present, buffer] of [
      [presentKey, this.keys[layer]!],
      [presentValue, this.values[layer]!],
    ] as const) {
      for (let bh = 0; bh < this.batch * nKV; bh++) {
        for (let t = first; t < T; t++) {
          const slot = (start + t) % slots;
          buffer.set(present.subarray((bh * T + t) * D, (bh * T + t + 1) * D), (bh * slots + slot) * D);
        }
      }
    }
  }

  /**
   * A one-sequence cache's chunk of keys and values token by token ([T, nKV, D], as the kernels give them) into the
   * slots of padded times start…start+T−1 (a chunk longer than a ring keeps its last `slots` tokens).
   */
  storeTokens(layer: number, keys: Float32Array, values: Float32Array, start: number, T: number): void {
    if (this.batch !== 1) throw new Error(`storeTokens takes a one-sequence cache, this one holds ${this.batch}`);
    const slots = this.slots[this.config.layer_types[layer]!];
    const { num_key_value_heads: nKV, head_dim: D } = this.config;
    for (const [tokens, buffer] of [
      [keys, this.keys[layer]!],
      [values, this.values[layer]!],
    ] as const) {
      for (let t = Math.max(0, T - slots); t < T; t++) {
        const slot = (start + t) % slots;
        for (let h = 0; h < nKV; h++)
          buffer.set(tokens.subarray((t * nKV + h) * D, (t * nKV + h + 1) * D), (h * slots + slot) * D);
      }
    }
  }

  /** Record the positions of a chunk's tokens in their slots, once per chunk (after every layer has stored). */
  advance(chunkPositions: Int32Array, start: number, T: number): void {
    for (const type of ['full_attention', 'sliding_attention'] as const) {
      const slots = this.slots[type];
      const held = this.slotPositions[type];
      for (let b = 0; b < this.batch; b++) {
        for (let t = Math.max(0, T - slots); t < T; t++)
          held[b * slots + ((start + t) % slots)] = chunkPositions[b * T + t]!;
      }
    }
  }
}
