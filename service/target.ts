// The target the service owns: the pinned checkpoint, its tokenizer, the weight store (pristine weights + episode
// overlays) and one engine whose weights are all graph inputs, so any episode's weights can be fed to any run.
import { Checkpoint, type CheckpointLocation } from './model/checkpoint.ts';
import { Gemma3Engine, type Device } from './model/runtime.ts';
import type { WeightSource } from './model/weight-source.ts';
import { Tokenizer, type ChatMessage } from './model/tokenizer.ts';
import { WeightStore } from './weights/store.ts';
import { ExecutionQueue } from './queue.ts';
import { IwiError } from './errors.ts';

/** One sequence as the tools take it: chat messages (rendered with the chat template) or a raw prompt. */
export type SequenceInput = { messages: ChatMessage[] } | { prompt: string };

/** Longest prompt a tool or endpoint may send, in tokens. */
export const MAX_PROMPT_TOKENS = 4096;

export class Target {
  readonly queue = new ExecutionQueue();

  private constructor(
    readonly checkpoint: Checkpoint,
    readonly tokenizer: Tokenizer,
    readonly store: WeightStore,
    readonly engine: Gemma3Engine,
  ) {}

  static async load(location: CheckpointLocation, options: { device?: Device; threads?: number } = {}): Promise<Target> {
    const checkpoint = Checkpoint.open(location);
    const tokenizer = await Tokenizer.load(checkpoint.dir);
    const store = new WeightStore(checkpoint);
    store.preload();
    const engine = await Gemma3Engine.create({ checkpoint, weights: 'inputs', source: store.pristineSource, device: options.device, threads: options.threads });
    return new Target(checkpoint, tokenizer, store, engine);
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
    if (ids.length > MAX_PROMPT_TOKENS) throw new IwiError('REQUEST_INVALID', `a sequence has ${ids.length} tokens; the limit is ${MAX_PROMPT_TOKENS}`);
    return ids;
  }

  async close(): Promise<void> {
    await this.engine.close();
    this.checkpoint.close();
  }
}
