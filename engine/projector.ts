// The projector: where every weight product of a forward pass runs, chosen once when the engine is created, so that
// no forward pass asks which. Two exist: the CPU's (cpu-projector.ts: our BF16 kernel, and a prefill GEMM for long
// prompts) and a device's (device.ts: onnxruntime sessions holding each weight on a GPU).
import type { CallBuffers } from './call-buffers.ts';
import type { Chunk } from './chunk.ts';
import type { WeightSource } from './weight-source.ts';

/**
 * The projections of one chunk: y_p [M, N_p] = x [M, K] · W_pᵀ for each named BF16 weight W_p [N_p, K] (Linear
 * weights as stored, all of the same input x; M = the chunk's rows). Several names in one call let the kernel read x
 * once for a layer's q, k and v, or gate and up.
 */
export type Project = ((names: string[], x: Float32Array) => Promise<Float32Array[]>) & {
  /**
   * z [M, I] = gelu_tanh(x · gateᵀ) · (x · upᵀ), the MLP's two input products and its gated GELU in one pass, bit for
   * bit what the two products and kernels.ts's gatedGelu give; there only where the projector fuses them (the CPU's on
   * AMX: gemmGatedGelu). z may lie in the call's buffers, as the products do.
   */
  gatedGelu?: (gate: string, up: string, x: Float32Array) => Promise<Float32Array>;
};

export interface Projector {
  /**
   * The products themselves take x rounded to BF16 and round their outputs to BF16 (bf16 precision on AMX), so the
   * engine puts no RoundingProjector around them.
   */
  readonly roundsToBf16?: boolean;
  /**
   * The projections of `chunk` on `weights`; scratch the chunk needs lives as long as the returned function. Outputs
   * may lie in the call's `buffers`: valid until the next product of the same weights' shapes in the call.
   */
  forChunk(weights: WeightSource, chunk: Chunk, buffers: CallBuffers): Project;
  /**
   * Logits [R, n] of the vocabulary block n0 … n0 + n − 1 for final-normed rows [R, H] (the tied head's rows); they
   * may lie in the call's `buffers`: valid until the next head block of the call.
   */
  head(
    weights: WeightSource,
    rows: Float32Array,
    R: number,
    n0: number,
    n: number,
    buffers: CallBuffers,
  ): Promise<Float32Array>;
  /**
   * Past slots a call's first chunk attends to besides its own keys: 0, or 1 never-attended slot (position −1, zeros)
   * where the provider cannot take a past of length 0 (onnxruntime's WebGPU crashes on it, measured on lavapipe).
   */
  readonly firstChunkPastSlots: 0 | 1;
  /** A call on `weights` ended: what it made for its own edits goes. */
  endCall(weights: WeightSource): Promise<void>;
  release(): Promise<void>;
}
