// The small onnxruntime graphs between the projections (gemma3-graph.ts builds them): RoPE tables and masks, the
// norms, attention (a decode step's only up to its norms and RoPE: attendDecode does the rest) and the gated GELU.
// Made once per engine, on the CPU or on the device's provider; sessions run without an arena, so a call's
// activations go back to the system when it ends.
import * as ort from 'onnxruntime-node';
import type { Gemma3TextConfig, LayerType } from './config.ts';
import { DeviceProjections } from './device.ts';
import {
  buildAttentionGraph,
  buildGatedGeluGraph,
  buildNormGraph,
  buildNormRopeGraph,
  buildPositionsGraph,
  buildResidualNormGraph,
} from './gemma3-graph.ts';
import type { EngineSettings } from './settings.ts';

export class Graphs {
  private constructor(
    readonly positions: ort.InferenceSession,
    readonly norm: ort.InferenceSession,
    readonly residualNorm: ort.InferenceSession,
    readonly gatedGelu: ort.InferenceSession,
    readonly attention: Partial<Record<LayerType, ort.InferenceSession>>,
    /** A decode step's q_norm, k_norm and RoPE for all rows at once (their attention is attendDecode's). */
    readonly normRope: ort.InferenceSession,
  ) {}

  static async create(config: Gemma3TextConfig, settings: EngineSettings): Promise<Graphs> {
    const options = graphSessionOptions(settings);
    const create = (model: Uint8Array) => ort.InferenceSession.create(model, options);
    // bf16 precision rounds the residual stream after each add, the queries and keys after their norms and RoPE, and
    // attention's probabilities.
    const bf16 = settings.precision === 'bf16';
    const attention: Partial<Record<LayerType, ort.InferenceSession>> = {};
    for (const type of new Set(config.layer_types))
      attention[type] = await create(buildAttentionGraph(config, type, { bf16 }));
    return new Graphs(
      await create(buildPositionsGraph(config)),
      await create(buildNormGraph(config)),
      await create(buildResidualNormGraph(config, { roundResidual: bf16 })),
      await create(buildGatedGeluGraph(config)),
      attention,
      await create(buildNormRopeGraph(config, { bf16 })),
    );
  }

  async release(): Promise<void> {
    for (const session of [
      this.positions,
      this.norm,
      this.residualNorm,
      this.gatedGelu,
      this.normRope,
      ...Object.values(this.attention),
    ])
      await session.release();
  }
}

/** Options of the graphs between the projections: on the CPU, or on the device's provider. */
export function graphSessionOptions(settings: EngineSettings): ort.InferenceSession.SessionOptions {
  const cpu = cpuSessionOptions(settings.threads);
  return settings.device === 'cpu' ? cpu : DeviceProjections.sessionOptions(settings.device, cpu);
}

export function cpuSessionOptions(threads: number): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    intraOpNumThreads: threads,
    // No arena: a call's activations go back to the system when it ends, instead of staying reserved at its peak.
    enableCpuMemArena: false,
    // Idle onnxruntime threads must not spin while our kernel runs on the same cores.
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  };
}

export function tensor(data: Float32Array | Int32Array, dims: number[]): ort.Tensor {
  return new ort.Tensor(data instanceof Float32Array ? 'float32' : 'int32', data, dims);
}
