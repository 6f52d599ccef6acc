// One attempt: an episode on the service, the editor driven through the harness until it submits, and the patch
// evaluated in fresh processes. Everything lands in the attempt's folder; attempt.json, written last, marks it
// complete, so an interrupted attempt is recognised and rerun from scratch.
import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeJsonAtomic } from '../core/files.ts';
import type { BudgetState } from '../service/api/index.ts';
import { endEvaluations, EpisodeLost, type AttemptStatus } from './attempt-folder.ts';
import { RESOURCE_COUNTS, type Evaluator, type Resources, type ResultsFile } from './evaluation.ts';
import { runEditor, type EditorConfig, type EditorRunResult, type EditorUsage } from './harness/index.ts';
import { AdminClient, ServiceError } from './service-client.ts';
import type { ServiceEnv } from './service-client.ts';
import type { Task } from './taskset.ts';

export {
  attemptId,
  clearInterrupted,
  completedAttempt,
  endEvaluations,
  EpisodeLost,
  type AttemptStatus,
} from './attempt-folder.ts';

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
  // The episode is deleted when the attempt ends, however it ends (an aborted one at once). One the service has
  // already deleted (its lease ran out after the submission: the patch is in this folder) is gone either way.
  const notFound = (error: unknown) => error instanceof ServiceError && error.status === 404;
  let deleted: Promise<unknown> | undefined;
  const deleteEpisode = () =>
    (deleted ??= admin.deleteEpisode(editor.episodeId).catch((error: unknown) => {
      if (!notFound(error)) throw error;
    }));
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
    const evaluating = options.evaluator.evaluate(task.subset(options.itemsPerKind), patch, {
      outputDir: dir,
      editor: { label: options.editorLabel, model: options.editor.model },
      resources: resourcesUsed(summary.budget.used, run.usage),
      args: { ...options.args, items_per_kind: options.itemsPerKind ?? null },
    });
    results = await endedWithAbort(evaluating, dir, signal);
  } catch (error) {
    // Nothing but its lease's end deletes an episode under its attempt (an abort deletes it, but is the abort's).
    if (lease && !signal?.aborted && deleted === undefined) {
      const gone = await admin.episode(editor.episodeId).then(() => false, notFound);
      if (gone)
        throw new EpisodeLost(
          `the service deleted this attempt's episode: its lease (${lease} s) ran out while the attempt ran (${(error as Error).message})`,
        );
    }
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

/**
 * The evaluation's result; once `signal` aborts, every evaluation process the attempt's folder records is ended, and
 * any it starts later (after the memory gate, or the pristine run's end) too, until the evaluation gives up.
 */
async function endedWithAbort<T>(evaluating: Promise<T>, dir: string, signal: AbortSignal | undefined): Promise<T> {
  let settled = false;
  const ending = async () => {
    while (!settled) {
      await endEvaluations(dir);
      await sleep(100);
    }
  };
  const onAbort = () => void ending();
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted) onAbort();
  try {
    return await evaluating;
  } finally {
    settled = true;
    signal?.removeEventListener('abort', onAbort);
  }
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
