// Scoring a submitted patch the way the benchmark publishes it: the terminal items and general controls are
// generated on the pristine weights and on the patched weights, each in a fresh `node` process running the fixed
// inference code (service/evaluate.ts), then checked and scored here. results.json holds every item's prompt,
// output, verdict and detail, the score, resource use, patch statistics, versions and arguments.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Device } from '../service/model/device.ts';
import {
  evaluateInFreshProcess,
  evaluationProcessBytes,
  patchSummary,
  targetModel,
  type CheckpointLocation,
  type EvaluationItem,
  type EvaluationRun,
  type PatchRef,
} from '../service/evaluate.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { processIdentity } from './file-lock.ts';
import { reserveMemory } from './memory-gate.ts';
import { runCheck } from './checks/index.ts';
import { gradedItems } from './episode.ts';
import type { EpisodeScore } from './scoring.ts';
import type { Task } from './taskset.ts';
import { FAMILY_VERSION, type EpisodeSpec, type Item, type Verdict } from './types.ts';

export const RESULTS_FORMAT = 'iwibench-results/1';

/** What the editor spent, from the service's episode summary and the harness (absent for a bare patch). */
export type Resources = {
  turns: number;
  tool_calls: number;
  forward_tokens: number;
  run_target_sequence_evaluations: number;
  inspect_target_sequence_evaluations: number;
  editor?: {
    requests: number;
    input_tokens: number;
    cached_input_tokens: number;
    output_tokens: number;
    reasoning_tokens: number;
  };
};

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
  evaluation: { pristine_seconds: number; edited_seconds: number; forward_tokens: number };
  created_at: string;
};

/** Run one fresh evaluation process once the memory gate lets it start, and read back its outputs. */
async function runWorker(
  { location, device }: Pick<EvaluateOptions, 'location' | 'device'>,
  items: EvaluationItem[],
  outFile: string,
  patch?: PatchRef,
): Promise<EvaluationRun> {
  let pid: number | undefined;
  const release = await reserveMemory(
    evaluationProcessBytes(location),
    () => pid,
    `evaluation process (${patch ? 'patched' : 'pristine'})`,
  );
  try {
    return await evaluateInFreshProcess({ location, items, patch: patch ?? null, device }, outFile, {
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

export function evaluationItems(spec: EpisodeSpec): EvaluationItem[] {
  return gradedItems(spec).map((item) => ({ id: item.id, messages: item.messages, max_new_tokens: item.maxNewTokens }));
}

export type EvaluateOptions = {
  location: CheckpointLocation;
  /** Where the evaluation processes' engine runs its projections (absent: cpu): the service's device. */
  device?: Device;
  task: Task;
  outputDir: string;
  /** The patch to evaluate and the id it must hold (from the submission's records): any other is refused. */
  patch?: PatchRef;
  editor?: ResultsFile['editor'];
  resources?: Resources | null;
  args?: Record<string, unknown>;
  /**
   * A folder of pristine runs keyed by model, revision and items: an episode evaluated again (another attempt or
   * editor, a replay) reuses the pristine outputs of its first fresh-process evaluation instead of regenerating them.
   */
  pristineCacheDir?: string;
};

/** Evaluate pristine and patched weights in fresh processes, score, and write results.json. */
export async function evaluateEpisode(options: EvaluateOptions): Promise<ResultsFile> {
  const { task, outputDir } = options;
  // Refuse a folder that does not hold the patch asked for before any evaluation runs (the evaluation process checks
  // again, from the bytes it applies, and its id and stats are what results.json records).
  if (options.patch) patchSummary(options.patch);
  const items = evaluationItems(task.spec);
  const base = await pristineRun(options, items);
  const edited = options.patch
    ? await runWorker(options, items, path.join(outputDir, 'outputs-edited.json'), options.patch)
    : base;
  const results = buildResults(options, base, edited);
  writeJsonAtomic(path.join(outputDir, 'results.json'), results);
  return results;
}

async function pristineRun(options: EvaluateOptions, items: EvaluationItem[]): Promise<EvaluationRun> {
  const file = path.join(options.outputDir, 'outputs-pristine.json');
  if (!options.pristineCacheDir) return runWorker(options, items, file);
  const model = targetModel(options.location);
  const key = createHash('sha256')
    .update(
      JSON.stringify([
        model.id,
        model.revision,
        items,
        // A device's outputs are its own; the CPU's key is the one it had before devices existed (its cache stays).
        ...(options.device && options.device !== 'cpu' ? [options.device] : []),
      ]),
    )
    .digest('hex');
  const cached = path.join(options.pristineCacheDir, `${key}.json`);
  if (existsSync(cached)) {
    copyFileSync(cached, file);
    return JSON.parse(readFileSync(cached, 'utf8')) as EvaluationRun;
  }
  const run = await runWorker(options, items, file);
  writeJsonAtomic(cached, run);
  return run;
}

export function buildResults(options: EvaluateOptions, base: EvaluationRun, edited: EvaluationRun): ResultsFile {
  const { task } = options;
  const { spec } = task;
  const text = (run: EvaluationRun) => Object.fromEntries(Object.entries(run.outputs).map(([id, o]) => [id, o.text]));
  const score = task.score(text(base), text(edited));
  const verdict = (item: Item, output: string) => {
    const v = runCheck(item.check, output);
    return { output, verdict: v, passed: v.behaviour && v.content };
  };
  // The patch as the evaluation process read it (its id checked against the one asked for, from the bytes it applied).
  const patch = options.patch ? edited.patch : null;
  if (options.patch && patch?.sha256 !== options.patch.id)
    throw new Error(`the edited run applied patch ${patch?.sha256 ?? 'none'}, not ${options.patch.id}`);
  return {
    format: RESULTS_FORMAT,
    versions: {
      package: PACKAGE_VERSION,
      family_version: FAMILY_VERSION,
      model_id: base.model.id,
      revision: base.model.revision,
    },
    args: options.args ?? {},
    episode: { family: spec.family, seed: spec.seed, control_seed: spec.controlSeed, params_key: spec.paramsKey },
    editor: options.editor ?? null,
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
    resources: options.resources ?? null,
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
    },
    created_at: new Date().toISOString(),
  };
}
