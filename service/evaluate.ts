// Fresh-process evaluation: one node process loads the pristine checkpoint, optionally applies a patch (every
// recorded digest verified), and generates the given items greedily with the fixed inference code. It knows nothing
// of families or scoring: items in, raw outputs out. The runner starts one such process for the pristine weights and
// one for the edited weights (`npx iwibench evaluate-patch`), never inside the service.
import { Checkpoint, type CheckpointLocation } from './model/checkpoint.ts';
import { Gemma3Engine, MAX_BATCH, type Device } from './model/runtime.ts';
import { checkpointSource, overlaySource, type WeightSource } from './model/weight-source.ts';
import { Tokenizer } from './model/tokenizer.ts';
import type { ChatMessage } from '../core/chat.ts';
import { replayPatch, type PatchRef } from './weights/patch.ts';

export type EvaluationItem = { id: string; messages: ChatMessage[]; max_new_tokens: number };
export type ItemOutput = { text: string; prompt_tokens: number; output_tokens: number; stop_reason: string };

export type EvaluationRun = {
  weights: 'pristine' | 'patched';
  /** The patch applied: `sha256` is its id, recomputed from the files and equal to the one asked for. */
  patch: { dir: string; sha256: string; sha256_verified: boolean; touched_tensors: string[] } | null;
  model: { id: string; revision: string };
  outputs: Record<string, ItemOutput>;
  forward_tokens: number;
  seconds: number;
};

/**
 * The fixed inference code of an evaluation: the pristine checkpoint, optionally with a patch applied (every digest
 * verified). Untouched weights are external initializers (fastest); a patch's touched tensors are fed from memory,
 * exactly as the service feeds an episode's edited tensors.
 */
export class ItemEvaluator {
  private constructor(
    private readonly checkpoint: Checkpoint,
    readonly tokenizer: Tokenizer,
    private readonly engine: Gemma3Engine,
    readonly patch: EvaluationRun['patch'],
  ) {}

  static async open(location: CheckpointLocation, options: { patch?: PatchRef; device?: Device } = {}): Promise<ItemEvaluator> {
    const checkpoint = Checkpoint.open(location);
    const tokenizer = await Tokenizer.load(checkpoint.dir);
    let source: WeightSource | undefined;
    let patch: EvaluationRun['patch'] = null;
    if (options.patch) {
      // Refuses another id than the one asked for, a wrong base, a digest mismatch, a bad payload.
      const { patch: loaded, tensors } = replayPatch(checkpoint, options.patch.dir, options.patch.id);
      source = overlaySource(checkpointSource(checkpoint), tensors);
      patch = { dir: loaded.dir, sha256: loaded.id, sha256_verified: true, touched_tensors: [...tensors.keys()] };
    }
    const engine = await Gemma3Engine.create({ checkpoint, source, device: options.device });
    return new ItemEvaluator(checkpoint, tokenizer, engine, patch);
  }

  get model(): EvaluationRun['model'] {
    return { id: this.checkpoint.modelId, revision: this.checkpoint.revision };
  }

  /** Generate every item greedily. Items with the same token cap are batched; a batch's outputs equal each item run alone (tested). */
  async run(items: EvaluationItem[], onProgress?: (done: number, total: number) => void): Promise<{ outputs: Record<string, ItemOutput>; forwardTokens: number }> {
    const outputs: Record<string, ItemOutput> = {};
    let forwardTokens = 0;
    const byCap = new Map<number, EvaluationItem[]>();
    for (const item of items) byCap.set(item.max_new_tokens, [...(byCap.get(item.max_new_tokens) ?? []), item]);
    let done = 0;
    for (const [cap, group] of byCap) {
      for (let i = 0; i < group.length; i += MAX_BATCH) {
        const batch = group.slice(i, i + MAX_BATCH);
        const results = await this.engine.generate(batch.map((item) => this.tokenizer.chatIds(item.messages)), { maxNewTokens: cap });
        batch.forEach((item, k) => {
          const r = results[k]!;
          outputs[item.id] = { text: this.tokenizer.decode(r.outputIds), prompt_tokens: r.promptTokens, output_tokens: r.outputTokens, stop_reason: r.stopReason };
          forwardTokens += r.promptTokens + r.outputTokens;
        });
        done += batch.length;
        onProgress?.(done, items.length);
      }
    }
    return { outputs, forwardTokens };
  }

  async close(): Promise<void> {
    await this.engine.close();
    this.checkpoint.close();
  }
}

/** One evaluation process's whole job: open, generate every item, close. */
export async function evaluateItems(
  location: CheckpointLocation,
  items: EvaluationItem[],
  options: { patch?: PatchRef; device?: Device; onProgress?: (done: number, total: number) => void } = {},
): Promise<EvaluationRun> {
  const started = Date.now();
  const evaluator = await ItemEvaluator.open(location, options);
  const { outputs, forwardTokens } = await evaluator.run(items, options.onProgress);
  await evaluator.close();
  return {
    weights: options.patch ? 'patched' : 'pristine',
    patch: evaluator.patch,
    model: evaluator.model,
    outputs,
    forward_tokens: forwardTokens,
    seconds: (Date.now() - started) / 1000,
  };
}
