// The service's engine, in a worker thread: a call's prefill and decode never block the service's event loop
// (onnxruntime runs synchronously inside its promise), so /health and other routes answer while the target computes.
// Same methods as Gemma3Engine. Weights must live in SharedArrayBuffers (allocateBf16): the worker reads the store's
// arrays in place, and an edit made between calls is seen by the next one. Calls are run as given; the service
// serialises them through its execution queue, which also decides, at each `between`, when a call goes on.
import { Worker } from 'node:worker_threads';
import type { Checkpoint } from './checkpoint.ts';
import type { Gemma3TextConfig } from './config.ts';
import type { CallControl } from './control.ts';
import type { GenerateOptions, GenerateResult } from './generate.ts';
import type { InspectRequest, InspectResult } from './runtime.ts';
import type { Device } from './device.ts';
import type { Precision } from './settings.ts';
import type { WeightSource } from './weight-source.ts';
import { expectedTextTensors } from './names.ts';

export type WorkerInit = { dir: string; threads?: number; chunkRows?: number; device?: Device; precision?: Precision };

type Args =
  | { method: 'generate'; args: { prompts: number[][]; maxNewTokens: number } }
  | { method: 'inspect'; args: { requests: InspectRequest[]; layers: number[]; topK: number } }
  | { method: 'logits'; args: { ids: number[]; chunk?: number } };

export type CallMessage = Args & {
  type: 'call';
  id: number;
  weights: Record<string, Uint16Array>;
  /** The tensors whose arrays are the pristine store's (never written): a device keeps them across calls. */
  stable: string[];
  hooks: { onToken: boolean; onLogits: boolean; stopWhen: boolean };
  /** Int32 flag for the synchronous stop-rule answer. */
  flag: SharedArrayBuffer;
};
export type HostReply = { type: 'resume'; id: number; abort: boolean } | { type: 'close' };
export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'between'; id: number }
  | { type: 'token'; id: number; index: number; token: number }
  | { type: 'logits'; id: number; index: number; logits: Float32Array }
  | { type: 'stop?'; id: number; index: number; outputIds: number[] }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; name: string; message: string; code?: string };

type Pending = {
  options: Partial<GenerateOptions> & CallControl;
  flag: Int32Array;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** The host-side error that stopped the call at a slice (a time limit, a cancellation), reported instead of the worker's. */
  stoppedBy?: unknown;
};

export class EngineHost {
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private failure: Error | undefined;

  private constructor(
    private readonly worker: Worker,
    readonly config: Gemma3TextConfig,
    private readonly source: WeightSource,
  ) {
    worker.on('message', (message: WorkerMessage) => this.onMessage(message));
    worker.on('error', (error) => this.fail(error));
    worker.on('exit', (code) => this.fail(new Error(`the engine worker exited (code ${code})`)));
  }

  /** Start the worker on a checkpoint; `source` gives the weights of calls that name none (the pristine store). */
  static async start(
    checkpoint: Checkpoint,
    source: WeightSource,
    options: { threads?: number; chunkRows?: number; device?: Device; precision?: Precision } = {},
  ): Promise<EngineHost> {
    const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), {
      workerData: {
        module: new URL('./engine-worker.ts', import.meta.url).href,
        dir: checkpoint.dir,
        ...options,
      } satisfies WorkerInit & { module: string },
    });
    await new Promise<void>((resolve, reject) => {
      worker.once('message', (message: WorkerMessage) =>
        message.type === 'ready' ? resolve() : reject(new Error(`unexpected first message ${message.type}`)),
      );
      worker.once('error', reject);
    });
    return new EngineHost(worker, checkpoint.config, source);
  }

  generate(prompts: number[][], options: GenerateOptions): Promise<GenerateResult[]> {
    return this.call({ method: 'generate', args: { prompts, maxNewTokens: options.maxNewTokens } }, options) as Promise<
      GenerateResult[]
    >;
  }

  inspect(
    requests: InspectRequest[],
    options: CallControl & { layers: number[]; topK: number; weights?: WeightSource },
  ): Promise<InspectResult[]> {
    return this.call(
      { method: 'inspect', args: { requests, layers: options.layers, topK: options.topK } },
      options,
    ) as Promise<InspectResult[]>;
  }

  logits(ids: number[], options: CallControl & { chunk?: number; weights?: WeightSource } = {}): Promise<Float32Array> {
    return this.call({ method: 'logits', args: { ids, chunk: options.chunk } }, options) as Promise<Float32Array>;
  }

  async close(): Promise<void> {
    if (this.failure) return;
    this.failure = new Error('the engine is closed');
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    this.worker.postMessage({ type: 'close' } satisfies HostReply);
    await exited;
  }

  private call(args: Args, options: Partial<GenerateOptions> & CallControl): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const weights: Record<string, Uint16Array> = {};
    const stable: string[] = [];
    const source = options.weights ?? this.source;
    for (const name of expectedTextTensors(this.config).keys()) {
      const bits = source.bf16(name);
      if (!(bits.buffer instanceof SharedArrayBuffer))
        return Promise.reject(new Error(`weights of "${name}" are not in shared memory (allocateBf16)`));
      weights[name] = bits;
      if (bits === this.source.bf16(name)) stable.push(name);
    }
    const id = this.nextId++;
    const flag = new SharedArrayBuffer(4);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { options, flag: new Int32Array(flag), resolve, reject });
      const hooks = { onToken: !!options.onToken, onLogits: !!options.onLogits, stopWhen: !!options.stopWhen };
      this.worker.postMessage({ type: 'call', id, weights, stable, hooks, flag, ...args } satisfies CallMessage);
    });
  }

  private onMessage(message: WorkerMessage): void {
    if (message.type === 'ready') return;
    const call = this.pending.get(message.id);
    if (!call) return;
    switch (message.type) {
      case 'between':
        void this.between(message.id, call);
        return;
      case 'token':
        call.options.onToken?.(message.index, message.token);
        return;
      case 'logits':
        call.options.onLogits?.(message.index, message.logits);
        return;
      case 'stop?': {
        let stop = false;
        try {
          stop = call.options.stopWhen?.(message.index, message.outputIds) ?? false;
        } finally {
          Atomics.store(call.flag, 0, stop ? 2 : 1);
          Atomics.notify(call.flag, 0);
        }
        return;
      }
      case 'result':
        this.pending.delete(message.id);
        call.resolve(message.value);
        return;
      case 'error': {
        this.pending.delete(message.id);
        if (call.stoppedBy) return call.reject(call.stoppedBy);
        const error = Object.assign(
          new Error(message.message),
          { name: message.name },
          message.code ? { code: message.code } : {},
        );
        call.reject(error);
      }
    }
  }

  /** The worker is between slices: let the caller's control decide (the queue's turn, a limit, a cancellation). */
  private async between(id: number, call: Pending): Promise<void> {
    let abort = false;
    try {
      call.options.signal?.throwIfAborted();
      await call.options.between?.();
      call.options.signal?.throwIfAborted();
    } catch (error) {
      call.stoppedBy = error;
      abort = true;
    }
    this.worker.postMessage({ type: 'resume', id, abort } satisfies HostReply);
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
  }
}
