// Scoring a submitted patch the way the benchmark publishes it: the terminal items and general controls are
// generated on the pristine weights and on the patched weights, each in a fresh `node` process running the fixed
// inference code (service/evaluate.ts), then checked and scored here. results.json holds every item's prompt,
// output, verdict and detail, the score, resource use, patch statistics, versions and arguments.
//
// The Evaluator is built once by the command that evaluates (the target, its device, the pristine cache) and handed
// down to the pilot and its attempts: `evaluator.evaluate(task, patch, record)`.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { arithmeticName, DEFAULT_PRECISION, type Device, type Precision } from '../engine/index.ts';
import {
  evaluateInFreshProcess,
  evaluationTarget,
  MAX_EVALUATION_ROWS,
  patchSummary,
  type BatchLimit,
  type CheckpointLocation,
  type EvaluationItem,
  type EvaluationJob,
  type EvaluationRun,
  type PatchRef,
} from '../service/evaluate.ts';
import { IwiError } from '../core/errors.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { processIdentity } from './file-lock.ts';
import { availableBytes, reserveMemory } from './memory-gate.ts';
import { runCheck } from './checks/index.ts';
import { gradedItems } from './episode.ts';
import type { EditorUsage } from './harness/index.ts';
import type { EpisodeScore } from './scoring.ts';
import type { Task } from './taskset.ts';
import { FAMILY_VERSION, type EpisodeSpec, type Item, type Verdict } from './types.ts';

export const RESULTS_FORMAT = 'iwibench-results/1';

/** The service's counters of an episode that results.json records. */
export const RESOURCE_COUNTS = [
  'turns',
  'tool_calls',
  'forward_tokens',
  'run_target_sequence_evaluations',
  'inspect_target_sequence_evaluations',
] as const;

/** What the editor spent, from the service's episode summary and the harness (absent for a bare patch). */
export type Resources = Record<(typeof RESOURCE_COUNTS)[number], number> & { editor?: EditorUsage };

export type ItemResult = {
  id: string;
  kind: Item['kind'];
  messages: Item['messages'];
  max_new_tokens: number;
  check: Item['check'];
  base: { output: string; verdict: Verdict; passed: boolean };
  edited: { output: string; verdict: Verdict; passed: boolean };
};

export type ResultsFile = {
  format: typeof RESULTS_FORMAT;
  versions: { package: string; family_version: string; model_id: string; revision: string };
  args: Record<string, unknown>;
  episode: { family: string; seed: number; control_seed: number; params_key: string };
  editor: { label: string; model?: string } | null;
  patch: {
    dir: string;
    sha256: string;
    changed_parameters: number;
    tensors: Record<string, unknown>;
    ops: number;
  } | null;
  score: EpisodeScore;
  resources: Resources | null;
  items: ItemResult[];
  /**
   * The evaluation processes' time and work, and how they computed: the device, the precision and the arithmetic's name
   * (absent in results of before each: float32, and an unnamed arithmetic), and the kernel path that computed (the
   * speed's, never the bits').
   */
  evaluation: {
    pristine_seconds: number;
    edited_seconds: number;
    forward_tokens: number;
    device?: Device;
    precision?: Precision;
    arithmetic?: string;
    kernel?: string;
  };
  created_at: string;
};

export function evaluationItems(spec: EpisodeSpec): EvaluationItem[] {
  return gradedItems(spec).map((item) => ({ id: item.id, messages: item.messages, max_new_tokens: item.maxNewTokens }));
}

/** What an evaluation's results.json records beside the score: where, by whom, at what cost, with which arguments. */
export type EvaluationRecord = {
  outputDir: string;
  editor?: ResultsFile['editor'];
  resources?: Resources | null;
  args?: Record<string, unknown>;
};

/**
 * Evaluates patches of one target: each run in a fresh process once the memory gate lets it start, the pristine
 * outputs shared through the cache when there is one. Built once by a command (Evaluator.open) and handed down.
 */
export class Evaluator {
  private constructor(
    readonly location: CheckpointLocation,
    /** Where the evaluation processes' engine runs its projections: the device of the service the editor used. */
    readonly device: Device,
    /** The evaluation processes' arithmetic: the precision of the service the editor used. */
    readonly precision: Precision,
    /** The target's model id and revision (read once, at open). */
    readonly model: EvaluationRun['model'],
    /** The memory one evaluation process holds at most (the memory gate's reservation). */
    private readonly processBytes: number,
    /** The batch limit each evaluation process is given (--max-batch, or the memory its rows may take). */
    readonly batch: BatchLimit,
    /**
     * A folder of pristine runs keyed by model, revision, items, device, precision and arithmetic: an episode evaluated
     * again (another attempt or editor, a replay) reuses the pristine outputs of its first fresh-process evaluation
     * instead of regenerating them.
     */
    private readonly pristineCacheDir: string | undefined,
  ) {}

  /**
   * `maxBatch` (--max-batch N): the rows each evaluation process keeps in flight; absent, as many as the memory free
   * now allows (up to MAX_EVALUATION_ROWS), the process then choosing within them by the speed it measures.
   */
  static open(options: {
    location: CheckpointLocation;
    device?: Device;
    precision?: Precision;
    pristineCacheDir?: string;
    maxBatch?: number;
  }): Evaluator {
    const target = evaluationTarget(options.location);
    const { maxBatch } = options;
    if (maxBatch !== undefined && !(Number.isInteger(maxBatch) && maxBatch >= 1))
      throw new IwiError('ENGINE_SETTING_INVALID', `--max-batch must be a positive integer, got ${maxBatch}`);
    const fit = Math.floor((availableBytes() - target.processBytes(0)) / target.rowBytes);
    const rows = maxBatch ?? Math.min(MAX_EVALUATION_ROWS, Math.max(1, fit));
    const batch: BatchLimit = maxBatch !== undefined ? { maxBatch } : { memoryBytes: target.batchBytes(rows) };
    return new Evaluator(
      options.location,
      options.device ?? 'cpu',
      options.precision ?? DEFAULT_PRECISION,
      target.model,
      target.processBytes(rows),
      batch,
      options.pristineCacheDir,
    );
  }

  /**
   * Evaluate pristine and patched weights in fresh processes, score, and write results.json to record.outputDir.
   * `patch` must hold the id asked for (from the submission's records): any other is refused. No patch: the pristine
   * weights are scored against themselves.
   */
  async evaluate(task: Task, patch: PatchRef | undefined, record: EvaluationRecord): Promise<ResultsFile> {
    // Refuse a folder that does not hold the patch asked for before any evaluation runs (the evaluation process checks
    // again, from the bytes it applies, and its id and stats are what results.json records).
    if (patch) patchSummary(patch);
    const items = evaluationItems(task.spec);
    const base = await this.pristineRun(items, record.outputDir);
    const edited = patch ? await this.run(items, path.join(record.outputDir, 'outputs-edited.json'), patch) : base;
    const results = buildResults(task, patch, record, base, edited);
    writeJsonAtomic(path.join(record.outputDir, 'results.json'), results);
    return results;
  }

  private async pristineRun(items: EvaluationItem[], outputDir: string): Promise<EvaluationRun> {
    const file = path.join(outputDir, 'outputs-pristine.json');
    if (!this.pristineCacheDir) return this.run(items, file);
    const key = createHash('sha256')
      .update(
        // What decides the outputs, as a queue attempt's id names it (taskset/queue/settings.ts): a cache entry of
        // another arithmetic, or of before this key, is never reused.
        JSON.stringify([
          this.model.id,
          this.model.revision,
          items,
          this.device,
          this.precision,
          arithmeticName(this.precision, this.device),
        ]),
      )
      .digest('hex');
    const cached = path.join(this.pristineCacheDir, `${key}.json`);
    if (existsSync(cached)) {
      copyFileSync(cached, file);
      return JSON.parse(readFileSync(cached, 'utf8')) as EvaluationRun;
    }
    const run = await this.run(items, file);
    writeJsonAtomic(cached, run);
    return run;
  }

  /** One fresh evaluation process, once the memory gate lets it start; its outputs read back. */
  private async run(items: EvaluationItem[], outFile: string, patch?: PatchRef): Promise<EvaluationRun> {
    let pid: number | undefined;
    const release = await reserveMemory(
      this.processBytes,
      () => pid,
      `evaluation process (${patch ? 'patched' : 'pristine'})`,
    );
    try {
      const job: EvaluationJob = {
        location: this.location,
        items,
        patch: patch ?? null,
        device: this.device,
        precision: this.precision,
        batch: this.batch,
      };
      return await evaluateInFreshProcess(job, outFile, {
        onStart: (child) => {
          pid = child.pid;
          // A runner killed now leaves this process running until it notices (it then ends itself); the runner's
          // successor waits for it before clearing the folder: by pid and start time, as a pid may be reused.
          writeJsonAtomic(`${outFile}.pid`, processIdentity(child.pid!));
        },
      });
    } finally {
      release();
    }
  }
}

function buildResults(
  task: Task,
  asked: PatchRef | undefined,
  record: EvaluationRecord,
  base: EvaluationRun,
  edited: EvaluationRun,
): ResultsFile {
  const { spec } = task;
  // The score compares the two runs' outputs: a difference of arithmetic would count as the edit's.
  if (base.arithmetic !== edited.arithmetic)
    throw new Error(`the pristine run computed in ${base.arithmetic}, the edited one in ${edited.arithmetic}`);
  const text = (run: EvaluationRun) => Object.fromEntries(Object.entries(run.outputs).map(([id, o]) => [id, o.text]));
  const score = task.score(text(base), text(edited));
  const verdict = (item: Item, output: string) => {
    const v = runCheck(item.check, output);
    return { output, verdict: v, passed: v.behaviour && v.content };
  };
  // The patch as the evaluation process read it (its id checked against the one asked for, from the bytes it applied).
  const patch = asked ? edited.patch : null;
  if (asked && patch?.sha256 !== asked.id)
    throw new Error(`the edited run applied patch ${patch?.sha256 ?? 'none'}, not ${asked.id}`);
  return {
    format: RESULTS_FORMAT,
    versions: {
      package: PACKAGE_VERSION,
      family_version: FAMILY_VERSION,
      model_id: base.model.id,
      revision: base.model.revision,
    },
    args: record.args ?? {},
    episode: { family: spec.family, seed: spec.seed, control_seed: spec.controlSeed, params_key: spec.paramsKey },
    editor: record.editor ?? null,
    patch: patch
      ? {
          dir: patch.dir,
          sha256: patch.sha256,
          changed_parameters: patch.changed_parameters,
          tensors: patch.tensors,
          ops: patch.ops,
        }
      : null,
    score,
    resources: record.resources ?? null,
    items: gradedItems(spec).map((item) => ({
      id: item.id,
      kind: item.kind,
      messages: item.messages,
      max_new_tokens: item.maxNewTokens,
      check: item.check,
      base: verdict(item, base.outputs[item.id]!.text),
      edited: verdict(item, edited.outputs[item.id]!.text),
    })),
    evaluation: {
      pristine_seconds: base.seconds,
      edited_seconds: edited === base ? 0 : edited.seconds,
      forward_tokens: base.forward_tokens + (edited === base ? 0 : edited.forward_tokens),
      device: edited.device,
      precision: edited.precision,
      arithmetic: edited.arithmetic,
      kernel: edited.kernel,
    },
    created_at: new Date().toISOString(),
  };
}
