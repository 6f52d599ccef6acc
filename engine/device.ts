// The device path: every projection runs in an onnxruntime session on an execution provider
// (CUDA, WebGPU) that holds its weight as an initializer, so a weight goes to the device once, when its session is
// made, and a run sends only activations. The graphs between the projections run on the same provider (graphs.ts).
//
// Which sessions live how long: a tensor that cannot change while the engine lives (the engine's own source, or one
// a call marks `stable`: the service's pristine weights) keeps its session for the engine's life; any other tensor
// (an episode's edit, a patch given with one call) gets a session for that call only, made when the call first needs
// it and released when the call ends. So an edit uploads the touched tensor, once per call, and nothing else.
//
// 'ort-cpu' runs these very graphs on onnxruntime's CPU provider: the device path where no GPU is (tests, and a
// check of a GPU's numerics against the same graphs on a CPU). It is slow and holds BF16 twice; not for real runs.
import * as ort from 'onnxruntime-node';
import { buildProjectionGraph } from './gemma3-graph.ts';
import { DataType, GraphBuilder } from './onnx-builder.ts';
import { IwiError } from '../core/errors.ts';
import type { Chunk } from './chunk.ts';
import type { Project, Projector } from './projector.ts';
import type { WeightSource } from './weight-source.ts';

export const DEVICES = ['cpu', 'cuda', 'webgpu', 'ort-cpu'] as const;
/** Where projections run: `cpu` our BF16 kernel (the default), the others onnxruntime providers (this file). */
export type Device = (typeof DEVICES)[number];
export type Provider = 'cuda' | 'webgpu' | 'cpu';

/** The onnxruntime provider of a device path. */
export function providerOf(device: Exclude<Device, 'cpu'>): Provider {
  return device === 'ort-cpu' ? 'cpu' : device;
}

/** Refuses an unknown device before slow work (a CLI flag, a service option). */
export function checkDevice(device: string | undefined): asserts device is Device | undefined {
  if (device !== undefined && !(DEVICES as readonly string[]).includes(device))
    throw new IwiError('ENGINE_SETTING_INVALID', `--device must be one of ${DEVICES.join(', ')}, got "${device}"`);
}

/**
 * Readies this process for a device and refuses one whose provider onnxruntime cannot use here, with onnxruntime's
 * reason, by making one tiny session on it: before slow work, such as loading the weights. The CUDA provider's
 * libraries come from NuGet when onnxruntime-node is installed (not with ONNXRUNTIME_NODE_INSTALL=skip); WebGPU is
 * bundled but needs a GPU adapter.
 *
 * CUDA: onnxruntime's provider multiplies float32 in TF32 by default (10-bit mantissas, ~1e-3 relative error: HF's
 * float32 logits would be out of reach), and onnxruntime-node passes it no `use_tf32` option; NVIDIA's
 * NVIDIA_TF32_OVERRIDE=0 turns TF32 off in cuBLAS and cuDNN for the whole process, so it is set before CUDA starts,
 * unless the environment already sets it.
 */
/** How a machine gets onnxruntime's CUDA provider (the README's set-up says the same). */
export const CUDA_INSTALL =
  "its CUDA provider needs CUDA 12 and cuDNN 9 on the machine and is fetched by onnxruntime-node's install script, which package.json keeps from running: node node_modules/onnxruntime-node/script/install.js";

export async function prepareDevice(device: Device | undefined): Promise<void> {
  if (device === undefined || device === 'cpu') return;
  if (device === 'cuda') process.env.NVIDIA_TF32_OVERRIDE ??= '0';
  const g = new GraphBuilder();
  g.output('y', g.one('Neg', [g.input('x', DataType.FLOAT, [1])]), DataType.FLOAT, [1]);
  try {
    const session = await ort.InferenceSession.create(g.toBytes('probe'), {
      executionProviders: [providerOf(device)],
      logSeverityLevel: 3,
    });
    await session.release();
  } catch (error) {
    throw new IwiError(
      'ENGINE_SETTING_INVALID',
      `--device ${device}: onnxruntime cannot use its ${providerOf(device)} provider here: ${(error as Error).message}` +
        (device === 'cuda' ? `; ${CUDA_INSTALL}` : ''),
    );
  }
}

/**
 * Rows of the largest weight part one session holds: a protobuf model is at most 2 GiB, and the tied head at 4B is
 * 2.7 GB in float32. The head is cut into parts of whole rows; every decoder matrix is one part.
 */
const PART_ELEMENTS = 1 << 27;

type Part = { start: number; rows: number; session: ort.InferenceSession };
/** A tensor's sessions; `ranged` ones take the rows to project as inputs (the head's vocabulary blocks). */
type Uploaded = { parts: Promise<Part[]>; ranged: boolean };

export class DeviceProjections implements Projector {
  readonly firstChunkPastSlots = 1; // WebGPU crashes on a past of length 0
  /** Sessions made so far, by tensor name (a test reads it: which weights went to the device, and how often). */
  readonly uploads = new Map<string, number>();
  private readonly stable = new Map<string, Uploaded>();
  private readonly perCall = new WeakMap<WeightSource, Map<string, Uploaded>>();

  constructor(
    readonly device: Exclude<Device, 'cpu'>,
    private readonly options: {
      /** The engine's own source: its tensors never change while the engine lives. */
      engineSource: WeightSource;
      /** The tied head's tensor (the embedding), projected a vocabulary block at a time. */
      headName: string;
      shapeOf: (name: string) => [number, number];
      sessionOptions: ort.InferenceSession.SessionOptions;
      /** Elements of the largest part of a ranged tensor one session holds (tests use small values). */
      partElements?: number;
    },
  ) {}

  /** Session options of the graphs between the projections, on this device's provider. */
  static sessionOptions(device: Exclude<Device, 'cpu'>, cpu: ort.InferenceSession.SessionOptions) {
    const provider = providerOf(device);
    return provider === 'cpu' ? cpu : { ...cpu, executionProviders: [provider] };
  }

  /** A projection session's options: the graphs', with constant folding off, so a BF16 weight's Cast is not folded. */
  static projectionOptions(graph: ort.InferenceSession.SessionOptions): ort.InferenceSession.SessionOptions {
    return { ...graph, extra: { ...graph.extra, optimization: { disable_specified_optimizers: 'ConstantFolding' } } };
  }

  // Outputs come back from onnxruntime's device sessions as fresh arrays: the call's buffers are the CPU's.
  forChunk(weights: WeightSource, chunk: Chunk): Project {
    const M = chunk.ids.length;
    return async (names, x) => {
      const outs: Float32Array[] = [];
      for (const name of names) outs.push(await this.project(weights, name, x, M));
      return outs;
    };
  }

  head(weights: WeightSource, rows: Float32Array, R: number, n0: number, n: number): Promise<Float32Array> {
    return this.project(weights, this.options.headName, rows, R, { start: n0, count: n });
  }

  /**
   * y [M, count] = x [M, K] · W[start…start + count)ᵀ for the tensor `name` [N, K] of `weights`: all rows of a decoder
   * matrix (no range), or a range of the tied head's (a tensor is always asked for one way: its sessions differ).
   */
  async project(
    weights: WeightSource,
    name: string,
    x: Float32Array,
    M: number,
    range?: { start: number; count: number },
  ): Promise<Float32Array> {
    const [N, K] = this.options.shapeOf(name);
    const { start, count } = range ?? { start: 0, count: N };
    const uploaded = this.uploaded(weights, name, range !== undefined);
    const parts = await uploaded.parts;
    const y = new Float32Array(M * count);
    const feeds: Record<string, ort.Tensor> = { x: new ort.Tensor('float32', x, [M, K]) };
    for (const part of parts) {
      const from = Math.max(start, part.start);
      const to = Math.min(start + count, part.start + part.rows);
      if (from >= to) continue;
      if (uploaded.ranged) {
        feeds.start = new ort.Tensor('int64', BigInt64Array.of(BigInt(from - part.start)), [1]);
        feeds.end = new ort.Tensor('int64', BigInt64Array.of(BigInt(to - part.start)), [1]);
      }
      const out = (await part.session.run(feeds)).y!.data as Float32Array;
      const width = to - from;
      if (width === count) y.set(out);
      else for (let m = 0; m < M; m++) y.set(out.subarray(m * width, (m + 1) * width), m * count + (from - start));
    }
    return y;
  }

  /** Releases the sessions a call made for its changed tensors (the engine calls it when every call ends). */
  async endCall(weights: WeightSource): Promise<void> {
    const sessions = this.perCall.get(weights);
    this.perCall.delete(weights);
    if (sessions) await releaseAll([...sessions.values()]);
  }

  async release(): Promise<void> {
    await releaseAll([...this.stable.values()]);
    this.stable.clear();
  }

  private uploaded(weights: WeightSource, name: string, ranged: boolean): Uploaded {
    const stable = weights === this.options.engineSource || weights.stable?.(name) === true;
    let cache = this.stable;
    if (!stable) {
      cache = this.perCall.get(weights) ?? new Map();
      this.perCall.set(weights, cache);
    }
    let uploaded = cache.get(name);
    if (!uploaded) {
      const made: Uploaded = { parts: this.upload(name, weights.bf16(name), ranged), ranged };
      // A failed upload (no such provider, no device memory) is not kept: the next call tries again.
      made.parts.catch(() => cache.get(name) === made && cache.delete(name));
      cache.set(name, (uploaded = made));
    }
    if (uploaded.ranged !== ranged) throw new Error(`"${name}" is projected both with and without a row range`);
    return uploaded;
  }

  /** One session per part of the tensor's rows, each holding its rows (BF16 where the provider has BF16). */
  private async upload(name: string, bits: Uint16Array, ranged: boolean): Promise<Part[]> {
    const [N, K] = this.options.shapeOf(name);
    const partRows = ranged ? Math.max(1, Math.floor((this.options.partElements ?? PART_ELEMENTS) / K)) : N;
    const bf16 = providerOf(this.device) !== 'webgpu'; // WebGPU has no BF16 tensors: float32 on the device
    const parts: Part[] = [];
    try {
      for (let start = 0; start < N; start += partRows) {
        const rows = Math.min(partRows, N - start);
        const model = buildProjectionGraph(bits.subarray(start * K, (start + rows) * K), [rows, K], { bf16, ranged });
        parts.push({ start, rows, session: await ort.InferenceSession.create(model, this.options.sessionOptions) });
      }
    } catch (error) {
      for (const part of parts) await part.session.release();
      throw error;
    }
    this.uploads.set(name, (this.uploads.get(name) ?? 0) + 1);
    return parts;
  }
}

/** Releases every session made; a tensor whose sessions failed to be made has none (its error reached its call). */
async function releaseAll(uploads: Uploaded[]): Promise<void> {
  for (const uploaded of uploads) {
    const parts = await uploaded.parts.catch(() => [] as Part[]);
    for (const part of parts) await part.session.release();
  }
}
