// One attempt: an episode on the service, the editor driven through the harness until it submits, and the patch
// evaluated in fresh processes. Everything lands in the attempt's folder; attempt.json, written last, marks it
// complete, so an interrupted attempt is recognised and rerun from scratch.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeJsonAtomic } from '../core/files.ts';
import type { BudgetState } from '../service/api/index.ts';
import { isRunning, type ProcessIdentity } from './file-lock.ts';
import { RESOURCE_COUNTS, type Evaluator, type Resources, type ResultsFile } from './evaluation.ts';
import { runEditor, type EditorConfig, type EditorRunResult, type EditorUsage } from './harness/index.ts';
import { AdminClient } from './service-client.ts';
import type { ServiceEnv } from './service-client.ts';
import type { Task } from './taskset.ts';

export type AttemptStatus = {
  status: 'complete';
  id: string;
  family: string;
  seed: number;
  editor: string;
  reward: number;
  stop_reason: string;
  finished_at: string;
};

export function attemptId(family: string, seed: number, editorLabel: string, index: number): string {
  return `${family}-s${seed}-${editorLabel.replace(/[^A-Za-z0-9._-]+/g, '_')}-a${index}`;
}

export function completedAttempt(dir: string): AttemptStatus | undefined {
  const file = path.join(dir, 'attempt.json');
  if (!existsSync(file)) return undefined;
  const status = JSON.parse(readFileSync(file, 'utf8')) as AttemptStatus;
  return status.status === 'complete' ? status : undefined;
}

/**
 * An interrupted attempt's folder: wait for evaluation processes it may have left running, then clear it. Each is
 * named by pid and start time (`<out>.pid`, evaluation.ts), so a pid since reused by another process is not waited
 * for; an older file holding a bare pid is waited for by pid alone.
 */
export async function clearInterrupted(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.pid'))) {
    const recorded = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as ProcessIdentity | number;
    const identity = typeof recorded === 'number' ? { pid: recorded, start: null } : recorded;
    while (Number.isInteger(identity.pid) && isRunning(identity)) await sleep(200);
  }
  rmSync(dir, { recursive: true, force: true });
}

export type AttemptOptions = {
  task: Task;
  service: ServiceEnv;
  /** Scores the submitted patch (on the device of the service the editor used). */
  evaluator: Evaluator;
  editor: EditorConfig;
  editorLabel: string;
  dir: string;
  /** The attempt's id, as attempt.json records it; default: the folder's name (a queue worker fills a temp folder). */
  id?: string;
  /** Called once the editor has submitted, before evaluation: may throw to end the attempt there (a queue worker). */
  beforeEvaluation?: (run: EditorRunResult) => void | Promise<void>;
  /** Ends the attempt (a queue worker that lost its job): its episode is deleted at once, so the editor's next call fails. */
  signal?: AbortSignal;
  /**
   * The episode is created with this lease and renewed every third of it while the attempt runs (a queue worker's):
   * should the process die without deleting it, the service deletes it once the lease runs out.
   */
  episodeLeaseSeconds?: number;
  /** Evaluate only the first N items of each kind (smoke tests; see Task.subset). */
  itemsPerKind?: number;
  args?: Record<string, unknown>;
};

export async function runAttempt(options: AttemptOptions): Promise<{ results: ResultsFile; run: EditorRunResult }> {
  const { task, service, dir } = options;
  mkdirSync(dir, { recursive: true });
  const admin = new AdminClient(service.url, service.adminToken);
  const { signal } = options;
  signal?.throwIfAborted();
  // The seed's fixed budgets: never overridden here.
  const lease = options.episodeLeaseSeconds;
  const editor = await admin.createEpisode(
    {
      ...task.setup(),
      label: `${options.editorLabel} ${path.basename(dir)}`,
      ...(lease ? { lease_seconds: lease } : {}),
    },
    service.editorToken,
  );
  // A failed renewal is said once and tried again at the next tick: the lease has two more before it runs out.
  let renewalFailed = false;
  const renew = () =>
    void admin.renewEpisode(editor.episodeId).then(
      () => (renewalFailed = false),
      (error: Error) => {
        if (!renewalFailed)
          process.stderr.write(`attempt ${path.basename(dir)}: renewing its episode's lease: ${error.message}\n`);
        renewalFailed = true;
      },
    );
  const renewer = lease ? setInterval(renew, (lease * 1000) / 3) : undefined;
  renewer?.unref();
  // The episode is deleted when the attempt ends, however it ends (an aborted one at once).
  let deleted: Promise<unknown> | undefined;
  const deleteEpisode = () => (deleted ??= admin.deleteEpisode(editor.episodeId));
  const onAbort = () => void deleteEpisode().catch(() => {});
  signal?.addEventListener('abort', onAbort, { once: true });
  let results: ResultsFile;
  let run: EditorRunResult;
  try {
    run = await runEditor({ editor, config: options.editor, toolset: task.toolset, traceDir: dir });
    await options.beforeEvaluation?.(run);
    signal?.throwIfAborted();
    const summary = await admin.episode(editor.episodeId);
    // The patch is copied next to its results, so the attempt folder stands alone; evaluation refuses the copy unless
    // it holds the patch id the service reported at submission.
    const patch = { dir: path.join(dir, 'patch'), id: run.submitted.patch.sha256 };
    cpSync(run.submitted.patch.dir, patch.dir, { recursive: true });
    results = await options.evaluator.evaluate(task.subset(options.itemsPerKind), patch, {
      outputDir: dir,
      editor: { label: options.editorLabel, model: options.editor.model },
      resources: resourcesUsed(summary.budget.used, run.usage),
      args: { ...options.args, items_per_kind: options.itemsPerKind ?? null },
    });
  } catch (error) {
    await deleteEpisode().catch(() => {}); // the attempt's own error is the one to report
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    clearInterval(renewer);
  }
  await deleteEpisode();
  signal?.throwIfAborted();
  const status: AttemptStatus = {
    status: 'complete',
    id: options.id ?? path.basename(dir),
    family: task.spec.family,
    seed: task.spec.seed,
    editor: options.editorLabel,
    reward: results.score.reward,
    stop_reason: run.stopReason,
    finished_at: new Date().toISOString(),
  };
  writeJsonAtomic(path.join(dir, 'attempt.json'), status);
  return { results, run };
}

/** What the editor spent: the service's counters of the episode, and the editor API's usage from the harness. */
function resourcesUsed(used: BudgetState['used'], usage: EditorUsage): Resources {
  const count = (name: (typeof RESOURCE_COUNTS)[number]) => {
    const value = used[name];
    if (value === undefined) throw new Error(`the service's episode summary has no "${name}" count`);
    return value;
  };
  const counts = Object.fromEntries(RESOURCE_COUNTS.map((name) => [name, count(name)]));
  return { ...(counts as Record<(typeof RESOURCE_COUNTS)[number], number>), editor: { ...usage } };
}
