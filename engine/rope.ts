// RoPE's cos and sin tables on the CPU path, in JavaScript: angle = position · inv_freq in float32 (as the positions
// graph and HF compute it), then cos and sin in V8's software double precision (its fdlibm port: the same bits on
// every machine, where a library's vectorised cos may pick its code by CPU), rounded to float32. Kept by position, so
// a decode step's rows cost a look-up each. A device keeps the positions graph's tables (its own arithmetic).
import type { Gemma3TextConfig, LayerType } from './config.ts';
import { ropeInvFreq } from './gemma3-graph.ts';

export class RopeTables {
  private readonly inverse: Record<LayerType, Float32Array>;
  /** cos then sin, D/2 each, by layer type and position. */
  private readonly kept: Record<LayerType, Map<number, Float32Array>> = {
    full_attention: new Map(),
    sliding_attention: new Map(),
  };

  constructor(private readonly config: Gemma3TextConfig) {
    const D = config.head_dim;
    this.inverse = {
      sliding_attention: ropeInvFreq(config.rope_local_base_freq, D, 1),
      full_attention: ropeInvFreq(config.rope_theta, D, config.rope_linear_factor),
    };
  }

  /** cos and sin [rows × D/2] of a layer type at each position (negative: padding, taken as 0 as the graph does). */
  tables(type: LayerType, positions: Int32Array): { cos: Float32Array; sin: Float32Array } {
    const half = this.config.head_dim / 2;
    const cos = new Float32Array(positions.length * half);
    const sin = new Float32Array(positions.length * half);
    positions.forEach((position, r) => {
      const row = this.row(type, Math.max(position, 0));
      cos.set(row.subarray(0, half), r * half);
      sin.set(row.subarray(half), r * half);
    });
    return { cos, sin };
  }

  private row(type: LayerType, position: number): Float32Array {
    let row = this.kept[type].get(position);
    if (!row) {
      const inverse = this.inverse[type];
      const half = inverse.length;
      row = new Float32Array(2 * half);
      for (let i = 0; i < half; i++) {
        const angle = Math.fround(Math.fround(position) * inverse[i]!);
        row[i] = Math.fround(Math.cos(angle));
        row[half + i] = Math.fround(Math.sin(angle));
      }
      this.kept[type].set(position, row);
    }
    return row;
  }
}
