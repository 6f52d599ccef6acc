// The target the service owns: the pinned checkpoint, its tokenizer, the weight store (pristine BF16 weights + episode
// overlays, in shared memory) and one engine in a worker thread (engine-host.ts) that any episode's weights can be
// given to, call by call. One execution queue runs every call, a slice at a time.
import {
  checkDevice,
  Checkpoint,
  type CheckpointLocation,
  DEFAULT_PRECISION,
  type Device,
  EngineHost,
  type Precision,
  prepareDevice,
  Tokenizer,
  type WeightSource,
} from '../engine/index.ts';
import type { ChatMessage } from '../core/chat.ts';
import { PatchedSources, WeightStore } from './weights/index.ts';
import { ExecutionQueue } from './queue.ts';
import { LIMITS } from './api/limits.ts';
import { IwiError } from './errors.ts';

/** One sequence as the tools take it: chat messages (rendered with the chat template) or a raw prompt. */
export type SequenceInput = { messages: ChatMessage[] } | { prompt: string };

/** Default longest running time of one call (its own slices, not its waits), in seconds (`service --call-time-limit`). */
export const DEFAULT_CALL_TIME_LIMIT_S = 120;

export type TargetOptions = { device?: Device; precision?: Precision; threads?: number; callTimeLimitSeconds?: number };

export class Target {
  readonly queue: ExecutionQueue;
  /** Submitted patches over the pristine weights (the OpenAI-compatible endpoints' `<id>+patch:<sha256>`). */
  readonly patched: PatchedSources;

  private constructor(
    readonly checkpoint: Checkpoint,
    readonly tokenizer: Tokenizer,
    readonly store: WeightStore,
    readonly engine: EngineHost,
    /** Where the engine runs its projections (/health says it: evaluation must use the same). */
    readonly device: Device,
    /** The engine's arithmetic (/health says it: evaluation must use the same). */
    readonly precision: Precision,
    callTimeLimitSeconds: number,
  ) {
    this.queue = new ExecutionQueue(256, callTimeLimitSeconds * 1000);
    this.patched = new PatchedSources(checkpoint, store.pristineSource);
  }

  static async load(location: CheckpointLocation, options: TargetOptions = {}): Promise<Target> {
    checkDevice(options.device); // before the weights load
    await prepareDevice(options.device);
    const checkpoint = Checkpoint.open(location);
    // The tokenizer (~2.7 s of this thread) is built while the engine's worker thread starts (its modules and
    // sessions: ~1.7 s of its own). A missing tokenizer file is refused before the weights are read.
    Tokenizer.checkFiles(checkpoint.dir);
    const tokenizing = Tokenizer.load(checkpoint.dir);
    tokenizing.catch(() => undefined); // awaited below: a failure before then is not an unhandled rejection
    const store = new WeightStore(checkpoint);
    store.preload();
    const starting = EngineHost.start(checkpoint, store.pristineSource, {
      threads: options.threads,
      device: options.device,
      precision: options.precision,
    });
    starting.catch(() => undefined); // likewise
    let tokenizer: Tokenizer;
    try {
      tokenizer = await tokenizing;
    } catch (error) {
      await starting.then(
        (engine) => engine.close(),
        () => undefined,
      );
      throw error;
    }
    const engine = await starting;
    return new Target(
      checkpoint,
      tokenizer,
      store,
      engine,
      options.device ?? 'cpu',
      options.precision ?? DEFAULT_PRECISION,
      options.callTimeLimitSeconds ?? DEFAULT_CALL_TIME_LIMIT_S,
    );
  }

  get modelId(): string {
    return this.checkpoint.modelId;
  }

  get pristine(): WeightSource {
    return this.store.pristineSource;
  }

  /** Token ids of a sequence: the chat template with the generation prompt, or the raw text after a BOS. */
  promptIds(sequence: SequenceInput, continuation = ''): number[] {
    let ids: number[];
    try {
      ids = 'messages' in sequence ? this.tokenizer.chatIds(sequence.messages) : this.tokenizer.encode(sequence.prompt);
    } catch (error) {
      throw new IwiError('REQUEST_INVALID', `cannot render the chat: ${(error as Error).message}`);
    }
    if (continuation) ids = [...ids, ...this.tokenizer.encodeRaw(continuation)];
    if (ids.length > LIMITS.promptTokens)
      throw new IwiError('REQUEST_INVALID', `a sequence has ${ids.length} tokens; the limit is ${LIMITS.promptTokens}`);
    return ids;
  }

  async close(): Promise<void> {
    await this.engine.close();
    this.checkpoint.close();
  }
}
