// bf16 precision around any projector: every product takes its input rounded to BF16 and gives its output rounded to
// BF16, as a torch.bfloat16 Linear does (float32 accumulation inside). The tied head takes its rows rounded and keeps
// its logits in float32 (HF upcasts the logits before it samples or scores them). One wrapper for the CPU's projector
// and a device's, so the rounding has one definition whatever multiplies.
import type { CallBuffers } from './call-buffers.ts';
import type { Chunk } from './chunk.ts';
import { roundBf16 } from './kernels.ts';
import type { Project, Projector } from './projector.ts';
import type { WeightSource } from './weight-source.ts';

/** `x` rounded to BF16 in the call's buffers (the caller's array is left as it is). */
function roundedCopy(x: Float32Array, buffers: CallBuffers, slot: string): Float32Array {
  const copy = buffers.take(slot, x.length);
  copy.set(x);
  roundBf16(copy);
  return copy;
}

export class RoundingProjector implements Projector {
  readonly firstChunkPastSlots: 0 | 1;

  constructor(private readonly inner: Projector) {
    this.firstChunkPastSlots = inner.firstChunkPastSlots;
  }

  forChunk(weights: WeightSource, chunk: Chunk, buffers: CallBuffers): Project {
    const project = this.inner.forChunk(weights, chunk, buffers);
    return async (names, x) => {
      const outs = await project(names, roundedCopy(x, buffers, 'bf16 input'));
      for (const out of outs) roundBf16(out);
      return outs;
    };
  }

  head(
    weights: WeightSource,
    rows: Float32Array,
    R: number,
    n0: number,
    n: number,
    buffers: CallBuffers,
  ): Promise<Float32Array> {
    return this.inner.head(weights, roundedCopy(rows, buffers, 'bf16 head input'), R, n0, n, buffers);
  }

  endCall(weights: WeightSource): Promise<void> {
    return this.inner.endCall(weights);
  }

  release(): Promise<void> {
    return this.inner.release();
  }
}
