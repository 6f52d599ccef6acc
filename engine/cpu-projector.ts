// The CPU's projector: every product of a forward pass in the addon's kernels (kernels.ts products), all the named
// weights of one x in one call, on the BF16 weights where they lie. The addon computes on the widest path the CPU
// has (AMX's tile unit for bf16 precision, else AVX-512, AVX2 or portable code) and every path gives the same bits, so
// a row's products depend on that row alone, whatever rows share the call, and on no machine.
//
// In bf16 precision the products round their input and output to BF16 themselves (the tied head keeps float32
// logits), so the engine puts no RoundingProjector around this one.
import type { CallBuffers } from './call-buffers.ts';
import type { Checkpoint } from './checkpoint.ts';
import type { Chunk } from './chunk.ts';
import { gatedProducts, gatedProductsHere, products, type ProductMode } from './kernels.ts';
import { embedTokensName } from './names.ts';
import type { Project, Projector } from './projector.ts';
import type { EngineSettings } from './settings.ts';
import type { WeightSource } from './weight-source.ts';

export class CpuProjector implements Projector {
  readonly firstChunkPastSlots = 0;
  readonly roundsToBf16: boolean;
  private readonly bf16: boolean;
  /** The MLP's gate and up products fused with its GELU: bf16 on AMX, decided once as the path is (kernels.ts). */
  private readonly gated: boolean;

  private constructor(
    private readonly checkpoint: Checkpoint,
    settings: EngineSettings,
  ) {
    this.bf16 = settings.precision === 'bf16';
    this.roundsToBf16 = this.bf16;
    this.gated = this.bf16 && gatedProductsHere();
  }

  static async create(checkpoint: Checkpoint, settings: EngineSettings): Promise<CpuProjector> {
    return new CpuProjector(checkpoint, settings);
  }

  forChunk(weights: WeightSource, _chunk: Chunk, buffers: CallBuffers): Project {
    const mode: ProductMode = { bf16: this.bf16, roundOutput: this.bf16 };
    // Into the call's buffers: a slot per product and shapes (each layer's q, k and v reuse the previous layer's, long
    // consumed) and per output.
    const project: Project = async (names, x) => {
      const shapes = names.map((name) => this.checkpoint.info(name).shape as [number, number]);
      const K = shapes[0]![1];
      const M = x.length / K;
      const slot = `products ${shapes.map(([N]) => `${N}×${K}`).join(' ')}`;
      const outs = shapes.map(([N], p) => buffers.take(`${slot} #${p}`, M * N));
      products(
        x,
        names.map((name) => weights.bf16(name)),
        outs,
        M,
        K,
        mode,
      );
      return outs;
    };
    // The MLP's gate and up products and its gated GELU in one pass, where the tile unit computes (the same bits).
    if (this.gated)
      project.gatedGelu = async (gate, up, x) => {
        const [N, K] = this.checkpoint.info(gate).shape as [number, number];
        const M = x.length / K;
        const z = buffers.take(`gated products ${N}×${K}`, M * N);
        gatedProducts(x, weights.bf16(gate), weights.bf16(up), z, M, K, true);
        return z;
      };
    return project;
  }

  async head(
    weights: WeightSource,
    rows: Float32Array,
    R: number,
    n0: number,
    n: number,
    buffers: CallBuffers,
  ): Promise<Float32Array> {
    const name = embedTokensName(this.checkpoint.config.tensor_prefix);
    const H = this.checkpoint.config.hidden_size;
    const out = buffers.take('head', R * n);
    const block = weights.bf16(name).subarray(n0 * H, (n0 + n) * H);
    products(rows, [block], [out], R, H, { bf16: this.bf16, roundOutput: false });
    return out;
  }

  async endCall(): Promise<void> {} // the CPU reads every weight where it lies: nothing was made for a call

  async release(): Promise<void> {}
}
