// Scoring a submitted patch the way the benchmark publishes it: the terminal items and general controls are
// generated on the pristine weights and on the patched weights, each in a fresh `node` process running the fixed
// inference code (service/evaluate.ts), then checked and scored here. results.json holds every item's prompt,
// output, verdict and detail, the score, resource use, patch statistics, versions and arguments.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint, type CheckpointLocation } from '../service/model/checkpoint.ts';
import type { EvaluationItem, EvaluationRun } from '../service/evaluate.ts';
import { MAX_BATCH, callMemoryBytes, textWeightBytes } from '../service/model/runtime.ts';
import { reserveMemory } from './memory-gate.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { loadPatch, type PatchRef } from '../service/weights/patch.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { runCheck } from './checks/index.ts';
import { gradedItems } from './episode.ts';
import { scoreEpisode, type EpisodeScore } from './scoring.ts';
import { FAMILY_VERSION, type EpisodeSpec, type Item, type Verdict } from './types.ts';

export const RESULTS_FORMAT = 'iwibench-results/1';
const CLI = fileURLToPath(new URL('../bin/iwibench.js', import.meta.url));

/** What the editor spent, from the service's episode summary and the harness (absent for a bare patch). */
export type Resources = {
  turns: number;
  tool_calls: number;
  forward_tokens: number;
  run_target_sequence_evaluations: number;
  inspect_target_sequence_evaluations: number;
  editor?: { requests: number; input_tokens: number; cached_input_tokens: number; output_tokens: number; reasoning_tokens: number };
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
  patch: { dir: string; sha256: string; changed_parameters: number; tensors: Record<string, unknown>; ops: number } | null;
  score: EpisodeScore;
  resources: Resources | null;
  items: ItemResult[];
  evaluation: { pristine_seconds: number; edited_seconds: number; forward_tokens: number };
  created_at: string;
};

/** Node, onnxruntime and the tokenizer in an evaluation process, beside its weights (measured at ~0.4 GiB). */
const RUNTIME_BYTES = 2 ** 29;

/** What one evaluation process holds at most: its BF16 weights, one batch of 8 items, and the runtime. */
function evaluationProcessBytes(location: CheckpointLocation): number {
  const checkpoint = Checkpoint.open(location);
  const { config } = checkpoint;
  checkpoint.close();
  return textWeightBytes(config) + callMemoryBytes(config, { batch: MAX_BATCH, tokens: 1024 }).total + RUNTIME_BYTES;
}

/** Run one fresh evaluation process (`evaluate-patch --worker`) and read back its outputs. */
export async function runWorker(location: CheckpointLocation, items: EvaluationItem[], outFile: string, patch?: PatchRef): Promise<EvaluationRun> {
  const jobFile = `${outFile}.job.json`;
  writeJsonAtomic(jobFile, { location, items, patch: patch ?? null } satisfies WorkerJob);
  let child: ReturnType<typeof spawn> | undefined;
  const release = await reserveMemory(evaluationProcessBytes(location), () => child?.pid, `evaluation process (${patch ? 'patched' : 'pristine'})`);
  await new Promise<void>((resolve, reject) => {
    child = spawn(process.execPath, [CLI, 'evaluate-patch', '--worker', '--job', jobFile, '--out', outFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    // A runner killed now leaves this process running; its successor waits for the pid before clearing the folder.
    writeJsonAtomic(`${outFile}.pid`, child.pid);
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.length > 64_000) stderr = stderr.slice(-32_000);
    });
    child.once('error', (error) => (release(), reject(error)));
    child.once('exit', (code, signal) => (release(), code === 0 ? resolve() : reject(new Error(`evaluation process (${patch ? 'patched' : 'pristine'}) failed with ${signal ?? `exit code ${code}`}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`))));
  });
  const run = JSON.parse(readFileSync(outFile, 'utf8')) as EvaluationRun;
  if (patch && run.patch?.sha256 !== patch.id) throw new Error(`evaluation process applied patch ${run.patch?.sha256 ?? 'none'}, not ${patch.id}`);
  return run;
}

/** The job file of one evaluation process (`evaluate-patch --worker --job FILE`). */
export type WorkerJob = { location: CheckpointLocation; items: EvaluationItem[]; patch: PatchRef | null };

/**
 * A smoke-test view of an episode: the first `n` items of each kind (target, preservation, override, controls).
 * Results made from it record `items_per_kind` in their args; published numbers use whole episodes.
 */
export function subsetSpec(spec: EpisodeSpec, n: number | undefined): EpisodeSpec {
  if (n === undefined) return spec;
  if (!Number.isInteger(n) || n < 1) throw new Error(`items per kind must be a positive integer, got ${n}`);
  const { target, preservation, override } = spec.terminal;
  return { ...spec, terminal: { target: target.slice(0, n), preservation: preservation.slice(0, n), override: override.slice(0, n) }, controls: spec.controls.slice(0, n) };
}

export function evaluationItems(spec: EpisodeSpec): EvaluationItem[] {
  return gradedItems(spec).map((item) => ({ id: item.id, messages: item.messages, max_new_tokens: item.maxNewTokens }));
}

export type EvaluateOptions = {
  location: CheckpointLocation;
  spec: EpisodeSpec;
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
  const { spec, outputDir } = options;
  // Refuse a folder that does not hold the patch asked for before any evaluation runs (the evaluation process and
  // buildResults check again, from the bytes they read).
  if (options.patch) loadPatch(options.patch.dir, options.patch.id);
  const items = evaluationItems(spec);
  const base = await pristineRun(options, items);
  const edited = options.patch ? await runWorker(options.location, items, path.join(outputDir, 'outputs-edited.json'), options.patch) : base;
  const results = buildResults(options, base, edited);
  writeJsonAtomic(path.join(outputDir, 'results.json'), results);
  return results;
}

async function pristineRun(options: EvaluateOptions, items: EvaluationItem[]): Promise<EvaluationRun> {
  const file = path.join(options.outputDir, 'outputs-pristine.json');
  if (!options.pristineCacheDir) return runWorker(options.location, items, file);
  const checkpoint = Checkpoint.open(options.location);
  const key = createHash('sha256').update(JSON.stringify([checkpoint.modelId, checkpoint.revision, items])).digest('hex');
  checkpoint.close();
  const cached = path.join(options.pristineCacheDir, `${key}.json`);
  if (existsSync(cached)) {
    copyFileSync(cached, file);
    return JSON.parse(readFileSync(cached, 'utf8')) as EvaluationRun;
  }
  const run = await runWorker(options.location, items, file);
  writeJsonAtomic(cached, run);
  return run;
}

export function buildResults(options: EvaluateOptions, base: EvaluationRun, edited: EvaluationRun): ResultsFile {
  const { spec } = options;
  const text = (run: EvaluationRun) => Object.fromEntries(Object.entries(run.outputs).map(([id, o]) => [id, o.text]));
  const score = scoreEpisode(spec, text(base), text(edited));
  const verdict = (item: Item, output: string) => {
    const v = runCheck(item.check, output);
    return { output, verdict: v, passed: v.behaviour && v.content };
  };
  const patch = options.patch ? loadPatch(options.patch.dir, options.patch.id) : undefined; // the id checked once more
  return {
    format: RESULTS_FORMAT,
    versions: { package: PACKAGE_VERSION, family_version: FAMILY_VERSION, model_id: base.model.id, revision: base.model.revision },
    args: options.args ?? {},
    episode: { family: spec.family, seed: spec.seed, control_seed: spec.controlSeed, params_key: spec.paramsKey },
    editor: options.editor ?? null,
    patch: patch
      ? { dir: patch.dir, sha256: patch.id, changed_parameters: patch.json.stats.changed_parameters, tensors: patch.json.stats.tensors, ops: patch.json.ops.length }
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
    evaluation: { pristine_seconds: base.seconds, edited_seconds: edited === base ? 0 : edited.seconds, forward_tokens: base.forward_tokens + (edited === base ? 0 : edited.forward_tokens) },
    created_at: new Date().toISOString(),
  };
}
