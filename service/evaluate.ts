// Fresh-process evaluation, the one entry the taskset uses: evaluateInFreshProcess starts a fresh node process
// (evaluate-worker.ts, not the CLI) that loads the pristine checkpoint, optionally applies a patch (every recorded
// digest verified), generates the given items greedily with the fixed inference code and hands back the raw
// outputs with the patch's id and stats. It knows nothing of families or scoring: items in, raw outputs out (the
// checkpoint's tokenizer encodes the items and decodes the outputs in the caller's process: textRun). The
// runner starts one such process for the pristine weights and one for the edited weights, never inside the service.
// Beside it: the target a location names with what such a process needs in memory, and a patch's summary without a
// process (to refuse a wrong folder before anything runs).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeJsonAtomic } from '../core/files.ts';
import {
  Checkpoint,
  chooseBatchLimit,
  continuousMemoryBytes,
  ENGINE_PROCESS_FLAGS,
  type CheckpointLocation,
  arithmeticName,
  checkpointSource,
  DEFAULT_PRECISION,
  kernelInfo,
  type Device,
  type Gemma3TextConfig,
  type Precision,
  Gemma3Engine,
  overlaySource,
  PROBE_ROWS,
  type SpeedPoint,
  textWeightBytes,
  Tokenizer,
  type WeightSource,
} from '../engine/index.ts';
import { relayProgress, reportLoading, startPhase } from './evaluation-progress.ts';
import type { ChatMessage } from '../core/chat.ts';
import { type LoadedPatch, loadPatch, type PatchRef, replayPatch, type TensorStats } from './weights/index.ts';

export type { CheckpointLocation, PatchRef };

/**
 * The batch limit of an evaluation process: a number of rows (--max-batch), or the memory its rows may take, the limit
 * then chosen within it by a short probe of the decode speed (engine/batch-limit.ts).
 */
export type BatchLimit = { maxBatch: number } | { memoryBytes: number };

/** What an evaluation applies and how it computes: the patch (none: pristine), the device, the precision, the rows. */
export type EvaluationOptions = { patch?: PatchRef; device?: Device; precision?: Precision; batch?: BatchLimit };

export type EvaluationItem = { id: string; messages: ChatMessage[]; max_new_tokens: number };
export type ItemOutput = { text: string; prompt_tokens: number; output_tokens: number; stop_reason: string };

/** A patch as results record it: its folder, its id (verified from the bytes read), its stats and number of ops. */
export type PatchSummary = {
  dir: string;
  sha256: string;
  changed_parameters: number;
  tensors: Record<string, TensorStats>;
  ops: number;
};

export type EvaluationRun = {
  weights: 'pristine' | 'patched';
  /** The patch applied: `sha256` is its id, recomputed from the files and equal to the one asked for. */
  patch: (PatchSummary & { sha256_verified: boolean; touched_tensors: string[] }) | null;
  model: { id: string; revision: string };
  /** Where the projections ran (--device). */
  device: Device;
  /** The arithmetic the outputs were computed in (--precision). */
  precision: Precision;
  /** That arithmetic's name and version (engine/arithmetic.ts): equal names, equal bits on any machine. */
  arithmetic: string;
  /** The kernel path that computed it (kernelInfo().isa, or the device): the speed's, never the bits'. */
  kernel: string;
  outputs: Record<string, ItemOutput>;
  forward_tokens: number;
  seconds: number;
  /** The sequences it kept in flight (continuous batching; the outputs do not depend on it). */
  batch_limit: number;
  /** The speed curve the limit was chosen by, and whether it was read from the machine's cache (null: --max-batch). */
  speed_curve: { points: SpeedPoint[]; cached: boolean } | null;
};

/** An item as an evaluation process takes it: its chat prompt as ids (the runner tokenizes), and its cap. */
export type TokenItem = { id: string; ids: number[]; max_new_tokens: number };
/** An item's output as an evaluation process gives it: ids (the runner decodes them). */
export type TokenOutput = Omit<ItemOutput, 'text'> & { output_ids: number[] };
/** What an evaluation process writes: an EvaluationRun whose outputs are ids. */
export type TokenRun = Omit<EvaluationRun, 'outputs'> & { outputs: Record<string, TokenOutput> };

/**
 * The fixed inference code of an evaluation: the pristine checkpoint, optionally with a patch applied (every digest
 * verified): the checkpoint's BF16 tensors with the patch's touched ones over them, as the service overlays an
 * episode's edits, on the device the service ran on. Ids in, ids out: the tokenizer is the caller's (textRun).
 */
export class ItemEvaluator {
  private constructor(
    private readonly checkpoint: Checkpoint,
    private readonly engine: Gemma3Engine,
    readonly patch: EvaluationRun['patch'],
    private readonly batch: BatchLimit,
  ) {}

  /** The rows in flight of the last run (chosen at its start, from the batch limit asked for). */
  maxBatch = 0;
  /** The speed curve the last run's limit was chosen by (null: a number of rows was asked for). */
  speedCurve: EvaluationRun['speed_curve'] = null;

  static async open(location: CheckpointLocation, options: EvaluationOptions = {}): Promise<ItemEvaluator> {
    reportLoading();
    const checkpoint = Checkpoint.open(location);
    let source: WeightSource | undefined;
    let patch: EvaluationRun['patch'] = null;
    if (options.patch) {
      // Refuses another id than the one asked for, a wrong base, a digest mismatch, a bad payload.
      const { patch: loaded, tensors } = replayPatch(checkpoint, options.patch.dir, options.patch.id);
      source = overlaySource(checkpointSource(checkpoint), tensors);
      patch = { ...summarise(loaded), sha256_verified: true, touched_tensors: [...tensors.keys()] };
    }
    const engine = await Gemma3Engine.create({
      checkpoint,
      source,
      device: options.device,
      precision: options.precision,
    });
    engine.loadWeights(); // every item multiplies them all: read while "loading" is shown, not in the first prefill
    return new ItemEvaluator(checkpoint, engine, patch, options.batch ?? { memoryBytes: os.freemem() });
  }

  get model(): EvaluationRun['model'] {
    return { id: this.checkpoint.modelId, revision: this.checkpoint.revision };
  }

  /**
   * Generate every item greedily, all in one continuous batch of at most `maxBatch` rows, each item with its own cap;
   * every output is bitwise the item's alone (tested), so the batch limit changes nothing but the time.
   */
  async run(items: TokenItem[]): Promise<{ outputs: Record<string, TokenOutput>; forwardTokens: number }> {
    const sequences = items.map((item) => ({ ids: item.ids, maxNewTokens: item.max_new_tokens }));
    // Chosen (and probed) before the phase starts, so that its seconds are the generation's.
    this.maxBatch = sequences.length > 0 ? await this.batchLimit(sequences) : 0;
    const progress = startPhase(this.patch ? 'patched' : 'pristine', items.length);
    const outputs: Record<string, TokenOutput> = {};
    let forwardTokens = 0;
    if (items.length === 0) return { outputs, forwardTokens };
    const results = await this.engine.generateMany(sequences, {
      maxBatch: this.maxBatch,
      onDone: (_, r) => progress.add(1, r.outputTokens),
    });
    items.forEach((item, k) => {
      const r = results[k]!;
      outputs[item.id] = {
        output_ids: r.outputIds,
        prompt_tokens: r.promptTokens,
        output_tokens: r.outputTokens,
        stop_reason: r.stopReason,
      };
      forwardTokens += r.promptTokens + r.outputTokens;
    });
    return { outputs, forwardTokens };
  }

  /** The rows in flight: the number asked for, or what the memory allows and the measured speed is worth. */
  private async batchLimit(sequences: { ids: number[]; maxNewTokens: number }[]): Promise<number> {
    if ('maxBatch' in this.batch) return this.batch.maxBatch;
    const tokens = Math.max(...sequences.map((s) => s.ids.length + s.maxNewTokens));
    const { perRow, fixed } = continuousMemoryBytes(this.checkpoint.config, { tokens });
    const memory = { memoryBytes: Math.max(0, this.batch.memoryBytes - fixed), bytesPerRow: perRow };
    const { byMemory } = chooseBatchLimit({ ...memory, speedCurve: [] });
    // Every item may be in flight: the probe measures up to the first row count that holds them all (none past it;
    // none at all for a few items), and no more rows than items are ever in flight.
    const holdsAll = PROBE_ROWS.find((rows) => rows >= sequences.length) ?? PROBE_ROWS.at(-1)!;
    const { curve, cached } = await this.engine.keptSpeedCurve({ maxRows: Math.min(byMemory, holdsAll) });
    this.speedCurve = { points: curve, cached };
    return Math.min(sequences.length, chooseBatchLimit({ ...memory, speedCurve: curve }).limit);
  }

  async close(): Promise<void> {
    await this.engine.close();
    this.checkpoint.close();
  }
}

/** One evaluation process's whole job: open, generate every item, close. */
export async function evaluateTokens(
  location: CheckpointLocation,
  items: TokenItem[],
  options: EvaluationOptions = {},
): Promise<TokenRun> {
  const started = Date.now();
  const evaluator = await ItemEvaluator.open(location, options);
  const { outputs, forwardTokens } = await evaluator.run(items);
  await evaluator.close();
  return {
    weights: options.patch ? 'patched' : 'pristine',
    patch: evaluator.patch,
    model: evaluator.model,
    device: options.device ?? 'cpu',
    precision: options.precision ?? DEFAULT_PRECISION,
    arithmetic: arithmeticName(options.precision ?? DEFAULT_PRECISION, options.device ?? 'cpu'),
    kernel: (options.device ?? 'cpu') === 'cpu' ? kernelInfo().isa : (options.device ?? 'cpu'),
    outputs,
    forward_tokens: forwardTokens,
    seconds: (Date.now() - started) / 1000,
    batch_limit: evaluator.maxBatch,
    speed_curve: evaluator.speedCurve,
  };
}

/** The tokenizer of the checkpoint at `location` (built once per process: engine/tokenizer.ts). */
export async function checkpointTokenizer(location: CheckpointLocation): Promise<Tokenizer> {
  const checkpoint = Checkpoint.open(location);
  try {
    return await Tokenizer.load(checkpoint.dir);
  } finally {
    checkpoint.close();
  }
}

/**
 * Items in, texts out, around a run on ids: the chat prompts tokenized and the outputs decoded here, by the
 * checkpoint's own tokenizer, so that an evaluation process builds none (~2.7 s and ~400 MB each, twice an attempt).
 */
export async function textRun<Run extends { outputs: Record<string, TokenOutput> }>(
  tokenizer: Tokenizer,
  items: EvaluationItem[],
  runTokens: (items: TokenItem[]) => Promise<Run>,
): Promise<Omit<Run, 'outputs'> & { outputs: Record<string, ItemOutput> }> {
  const run = await runTokens(
    items.map((item) => ({ id: item.id, ids: tokenizer.chatIds(item.messages), max_new_tokens: item.max_new_tokens })),
  );
  const outputs = Object.fromEntries(
    Object.entries(run.outputs).map(([id, { output_ids, ...counts }]) => [
      id,
      { text: tokenizer.decode(output_ids), ...counts },
    ]),
  );
  return { ...run, outputs };
}

/** An evaluation in this process: what a fresh process gives for the same job (tested). */
export async function evaluateItems(
  location: CheckpointLocation,
  items: EvaluationItem[],
  options: EvaluationOptions = {},
): Promise<EvaluationRun> {
  return textRun(await checkpointTokenizer(location), items, (tokens) => evaluateTokens(location, tokens, options));
}

function summarise(patch: LoadedPatch): PatchSummary {
  const { stats, ops } = patch.json;
  return {
    dir: patch.dir,
    sha256: patch.id,
    changed_parameters: stats.changed_parameters,
    tensors: stats.tensors,
    ops: ops.length,
  };
}

/** The patch of id `ref.id` in `ref.dir`, read and checked in this process (any other id is refused: PATCH_ID_MISMATCH). */
export function patchSummary(ref: PatchRef): PatchSummary {
  return summarise(loadPatch(ref.dir, ref.id));
}

/** Node and onnxruntime in an evaluation process, beside its weights (~0.2 GiB since it builds no tokenizer; kept). */
const RUNTIME_BYTES = 2 ** 29;

/** The rows an evaluation process is admitted for at most (the largest the speed probe tries). */
export const MAX_EVALUATION_ROWS = PROBE_ROWS[PROBE_ROWS.length - 1]!;

/** Prompt and new tokens a row is admitted for (the memory gate's figure per row). */
const ROW_TOKENS = 1024;

/** What one evaluation process of a target of this config holds at most with `rows` rows in flight. */
export function evaluationProcessBytes(config: Gemma3TextConfig, rows: number): number {
  const { perRow, fixed } = continuousMemoryBytes(config, { tokens: ROW_TOKENS });
  return textWeightBytes(config) + RUNTIME_BYTES + fixed + rows * perRow;
}

/**
 * The target at `location` as evaluations record and admit it, read once: its model id and revision, and what one
 * evaluation process holds at most with `rows` rows in flight (its BF16 weights, the rows' caches and activations,
 * one prefill chunk, and the runtime), and what each row adds.
 */
export function evaluationTarget(location: CheckpointLocation): {
  model: EvaluationRun['model'];
  processBytes: (rows: number) => number;
  rowBytes: number;
  /** The memory `rows` rows and the prefill chunk take (a BatchLimit's memoryBytes). */
  batchBytes: (rows: number) => number;
} {
  const checkpoint = Checkpoint.open(location);
  const { config } = checkpoint;
  checkpoint.close();
  const { perRow, fixed } = continuousMemoryBytes(config, { tokens: ROW_TOKENS });
  return {
    model: { id: checkpoint.modelId, revision: checkpoint.revision },
    processBytes: (rows) => evaluationProcessBytes(config, rows),
    rowBytes: perRow,
    batchBytes: (rows) => fixed + rows * perRow,
  };
}

/** An evaluation's job: the checkpoint, the items, and the patch to apply (null: pristine weights). */
export type EvaluationJob = {
  location: CheckpointLocation;
  items: EvaluationItem[];
  patch: PatchRef | null;
  /** Where the engine's projections run (absent: cpu); the service an editor used must have run on the same. */
  device?: Device;
  /** The engine's arithmetic (absent: the default, bf16); the service an editor used must have run with the same. */
  precision?: Precision;
  /** The batch limit (absent: chosen in the process from its free memory and a probe of the speed). */
  batch?: BatchLimit;
};

/** The job file of an evaluation process: the job with its items tokenized. */
export type TokenJob = Omit<EvaluationJob, 'items'> & { items: TokenItem[] };

/** The fresh process's own file, run through tsx's loader as bin/iwibench.js runs the CLI. */
export const EVALUATION_WORKER = fileURLToPath(new URL('./evaluate-worker.ts', import.meta.url));
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;

/**
 * Evaluate `job` in a fresh node process, its items tokenized and its outputs decoded here (textRun): the tokenized
 * job goes to `OUT.job.json`, the process writes its ids to `OUT.tokens.json`, and the outputs land in `OUT`.
 * `onStart` sees the child once it is spawned (its pid, for memory accounting or a pid file). A child that fails or
 * is killed rejects with its exit code or signal and the last lines of its stderr; a patched run must report the
 * patch id asked for.
 */
export async function evaluateInFreshProcess(
  job: EvaluationJob,
  outFile: string,
  options: { onStart?: (child: ChildProcess) => void } = {},
): Promise<EvaluationRun> {
  const what = `evaluation process (${job.patch ? 'patched' : 'pristine'})`;
  const tokensFile = `${outFile}.tokens.json`;
  const run = await textRun(await checkpointTokenizer(job.location), job.items, async (items) => {
    const jobFile = `${outFile}.job.json`;
    writeJsonAtomic(jobFile, { ...job, items } satisfies TokenJob);
    await runProcess(what, ['--job', jobFile, '--out', tokensFile, '--runner', String(process.pid)], outFile, options);
    try {
      return JSON.parse(readFileSync(tokensFile, 'utf8')) as TokenRun;
    } catch (error) {
      throw new Error(`${what} ended without writing its outputs to ${tokensFile}: ${(error as Error).message}`);
    }
  });
  if (job.patch && run.patch?.sha256 !== job.patch.id)
    throw new Error(`${what} applied patch ${run.patch?.sha256 ?? 'none'}, not ${job.patch.id}`);
  writeJsonAtomic(outFile, run);
  rmSync(tokensFile, { force: true });
  return run;
}

/** The evaluation process with these arguments, to its end; its progress relayed as `outFile`'s. */
function runProcess(
  what: string,
  workerArgs: string[],
  outFile: string,
  options: { onStart?: (child: ChildProcess) => void },
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const args = [...ENGINE_PROCESS_FLAGS, '--import', TSX_LOADER, EVALUATION_WORKER, ...workerArgs];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    child.on('message', (message) => relayProgress(message, outFile));
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
    });
    child.once('error', reject);
    // 'close', not 'exit': stderr is read to its end, so the error carries the child's last words.
    child.once('close', (code, signal) =>
      code === 0
        ? resolve()
        : reject(
            new Error(
              `${what} failed with ${signal ?? `exit code ${code}`}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
            ),
          ),
    );
    if (child.pid !== undefined) options.onStart?.(child);
  });
}
