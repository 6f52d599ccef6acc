// The CPU's projector. Where the CPU has AMX, every product runs on its tile unit: all the named weights in one
// gemmBf16Parts call (1.8–2.7× our kernel's rate from 16 rows, about as fast below), prompts, decode steps and the
// head alike (settings.ts, decodesOnGemm). Elsewhere decode steps, the head and short prompts multiply the BF16
// weights where they lie in our kernel (kernels.ts: BF16 widened exactly, float32 products and sums, 2 bytes read per
// weight; in bf16 precision over x rounded to BF16, or in VDPBF16PS's order), all the named weights in one call,
// and prompts of gemmMinTokens or more, compute-bound, take onnxruntime's GEMM, each weight widened into a float32
// tile (~1.6× our kernel's rate at 512 rows, docs/benchmarks.md; for few rows widening costs more than it saves).
//
// Every path gives a row bitwise the same result whatever rows share the call (MLAS's one-row special case is avoided
// by padding to two), and the path depends on the sequence's own length (chunk.gemm), so a batch equals each prompt
// alone and the service's run_target the evaluator however either batches.
import * as ort from 'onnxruntime-node';
import type { CallBuffers } from './call-buffers.ts';
import type { Checkpoint } from './checkpoint.ts';
import { gatherSequences, scatterSequences, type Chunk } from './chunk.ts';
import { buildLinearGraph } from './gemma3-graph.ts';
import { cpuSessionOptions, tensor } from './graphs.ts';
import { dotBf16Parts, gemmBf16Parts, gemmGatedGelu, matmulBf16Parts, widenBf16, type XParts } from './kernels.ts';
import { decoderMatrixShapes, embedTokensName, largestDecoderMatrix } from './names.ts';
import type { Project, Projector } from './projector.ts';
import { decodesOnGemm, type EngineSettings } from './settings.ts';
import type { WeightSource } from './weight-source.ts';

/**
 * One product over BF16 weights in place, by name: the kernel's (matmulBf16Parts; in bf16 precision, where
 * settings.bf16Kernel asks for VDPBF16PS's pair order, dotBf16Parts) or AMX's (gemmBf16Parts).
 */
type Product = { name: 'kernel' | 'amx'; run: typeof matmulBf16Parts };

/** AMX's product, with the parts x is split into and whether its outputs are rounded (gemmGatedGelu takes them too). */
type AmxProduct = Product & { xParts: XParts; roundOutput: boolean };

function kernelProduct(settings: Pick<EngineSettings, 'precision' | 'bf16Kernel'>): Product {
  const { precision, bf16Kernel } = settings;
  if (precision === 'float32' || bf16Kernel === 'widen') return { name: 'kernel', run: matmulBf16Parts };
  return { name: 'kernel', run: (x, ws, outs, m, k) => dotBf16Parts(x, ws, outs, m, k, bf16Kernel) };
}

/**
 * AMX's product: x split into three BF16 parts (float32 precision: exact), or one (bf16 precision: x rounded by the
 * split itself, one pass of the tile unit instead of three, the outputs rounded as they are stored unless they are
 * the head's logits, which stay float32).
 */
function amxProduct(settings: Pick<EngineSettings, 'precision'>, roundOutputs: boolean): AmxProduct {
  const xParts: XParts = settings.precision === 'bf16' ? 1 : 3;
  const roundOutput = roundOutputs && settings.precision === 'bf16';
  return {
    name: 'amx',
    xParts,
    roundOutput,
    run: (x, ws, outs, m, k) => gemmBf16Parts(x, ws, outs, m, k, xParts, roundOutput),
  };
}

export class CpuProjector implements Projector {
  readonly firstChunkPastSlots = 0;
  /** Elements of onnxruntime's float32 tile: the largest decoder matrix. */
  private readonly tileElements: number;
  private readonly amx: AmxProduct;
  private readonly amxHead: Product;
  private readonly kernel: Product;
  /** bf16 precision where AMX takes every product: the split rounds x, the GEMM its outputs (no wrapper's passes). */
  readonly roundsToBf16: boolean;

  private constructor(
    private readonly checkpoint: Checkpoint,
    private readonly settings: EngineSettings,
    /** onnxruntime's prefill GEMM by a decoder matrix's output features N, at gemmThreads(N) threads; else empty. */
    private readonly onnxGemm: Map<number, ort.InferenceSession>,
  ) {
    this.tileElements = largestDecoderMatrix(checkpoint.config);
    this.amx = amxProduct(settings, true);
    this.amxHead = amxProduct(settings, false);
    this.kernel = kernelProduct(settings);
    this.roundsToBf16 = settings.precision === 'bf16' && decodesOnGemm(settings) && settings.gemmMinTokens === 1;
  }

  static async create(checkpoint: Checkpoint, settings: EngineSettings): Promise<CpuProjector> {
    const sessions = new Map<number, ort.InferenceSession>();
    const byThreads = new Map<number, ort.InferenceSession>();
    for (const [n] of settings.prefillGemm === 'onnxruntime' ? decoderMatrixShapes(checkpoint.config) : []) {
      const threads = gemmThreads(n, settings.threads);
      if (!byThreads.has(threads))
        byThreads.set(threads, await ort.InferenceSession.create(buildLinearGraph(), cpuSessionOptions(threads)));
      sessions.set(n, byThreads.get(threads)!);
    }
    return new CpuProjector(checkpoint, settings, sessions);
  }

  forChunk(weights: WeightSource, chunk: Chunk, buffers: CallBuffers): Project {
    const gemmCount = chunk.gemm.filter(Boolean).length;
    // onnxruntime's GEMM widens each weight into a float32 tile (the largest decoder matrix), freed with the chunk.
    const tile =
      this.settings.prefillGemm === 'onnxruntime' && gemmCount > 0 ? new Float32Array(this.tileElements) : undefined;
    const project: Project = async (names, x) => {
      const shapes = names.map((name) => this.checkpoint.info(name).shape as [number, number]);
      const K = shapes[0]![1];
      const kernel = this.inOneCall(weights, names, shapes, this.kernel, buffers);
      const gemm =
        this.settings.prefillGemm === 'amx'
          ? this.inOneCall(weights, names, shapes, this.amx, buffers)
          : (rows: Float32Array) => this.onnxruntimeGemm(weights, names, shapes, rows, tile!);
      if (gemmCount === 0) return kernel(x);
      if (gemmCount === chunk.gemm.length) return gemm(x);
      const byKernel = kernel(gatherSequences(x, chunk, K, false));
      const byGemm = await gemm(gatherSequences(x, chunk, K, true));
      const M = x.length / K;
      return shapes.map(([N], p) => {
        const out = new Float32Array(M * N);
        scatterSequences(byKernel[p]!, out, chunk, N, false);
        scatterSequences(byGemm[p]!, out, chunk, N, true);
        return out;
      });
    };
    if (this.settings.prefillGemm === 'amx' && gemmCount === chunk.gemm.length)
      project.gatedGelu = async (gate, up, x) => this.gatedGeluOnAmx(weights, gate, up, x, buffers);
    return project;
  }

  /** gemmGatedGelu with AMX's product's parts and rounding (amxProduct), z in the call's buffers. */
  private gatedGeluOnAmx(weights: WeightSource, gate: string, up: string, x: Float32Array, buffers: CallBuffers) {
    const [N, K] = this.checkpoint.info(gate).shape as [number, number];
    const M = x.length / K;
    const z = buffers.take(`amx gated gelu ${N}×${K}`, M * N);
    const { xParts, roundOutput } = this.amx;
    gemmGatedGelu(x, weights.bf16(gate), weights.bf16(up), z, M, K, xParts, roundOutput);
    return z;
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
    (decodesOnGemm(this.settings) ? this.amxHead : this.kernel).run(rows, [block], [out], R, H);
    return out;
  }

  async endCall(): Promise<void> {} // the CPU reads every weight where it lies: nothing was made for a call

  async release(): Promise<void> {
    for (const session of new Set(this.onnxGemm.values())) await session.release();
  }

  /**
   * All the named weights in one product call of the kernel or of AMX, into the call's buffers: a slot per product
   * and shapes (each layer's q, k and v reuse the previous layer's, long consumed) and per output.
   */
  private inOneCall(
    weights: WeightSource,
    names: string[],
    shapes: [number, number][],
    product: Product,
    buffers: CallBuffers,
  ) {
    return (rows: Float32Array): Float32Array[] => {
      const K = shapes[0]![1];
      const count = rows.length / K;
      const slot = `${product.name} ${shapes.map(([N]) => `${N}×${K}`).join(' ')}`;
      const outs = shapes.map(([N], p) => buffers.take(`${slot} #${p}`, count * N));
      product.run(
        rows,
        names.map((name) => weights.bf16(name)),
        outs,
        count,
        K,
      );
      return outs;
    };
  }

  /** Each weight widened into `tile`, then its rows through onnxruntime's GEMM (one row is padded to two). */
  private async onnxruntimeGemm(
    weights: WeightSource,
    names: string[],
    shapes: [number, number][],
    rows: Float32Array,
    tile: Float32Array,
  ): Promise<Float32Array[]> {
    const K = shapes[0]![1];
    const count = rows.length / K;
    const input = count > 1 ? rows : Float32Array.from({ length: 2 * K }, (_, i) => rows[i % K]!);
    const outs: Float32Array[] = [];
    for (const [p, [N]] of shapes.entries()) {
      const w = tile.subarray(0, N * K);
      widenBf16(weights.bf16(names[p]!), w);
      const { y } = await this.onnxGemm.get(N)!.run({ x: tensor(input, [input.length / K, K]), w: tensor(w, [N, K]) });
      outs.push((y!.data as Float32Array).subarray(0, count * N));
    }
    return outs;
  }
}

/**
 * Threads for the prefill GEMM of an [N, K] weight: the most, up to `threads`, with which no split of N among them
 * (slices of ⌈N / t⌉ rounded up to 16 columns, and the rest) leaves a thread 64 columns or fewer. MLAS lengthens its
 * K blocks for such narrow slices (sgemm.cpp: "expand the K stride if N is small"), and which split it takes depends
 * on M, so a row's sum would depend on how many rows share the call (test/engine/runtime.test.ts).
 */
export function gemmThreads(n: number, threads: number): number {
  let safe = 1;
  for (let t = 2; t <= threads; t++) {
    const stride = Math.ceil(Math.ceil(n / t) / 16) * 16;
    const last = n - (Math.ceil(n / stride) - 1) * stride;
    if (stride <= 64 || last <= 64) break;
    safe = t;
  }
  return safe;
}
