// A pilot: every selected episode of a calibration, attempted by one editor, with N editors running at once against
// one service. Resumable: completed attempts are kept as they are, interrupted ones (no attempt.json) are rerun
// after any evaluation process they left behind has ended; pilot.json lists every attempt.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { writeJsonAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import {
  attemptId,
  clearInterrupted,
  completedAttempt,
  runAttempt,
  type AttemptOptions,
  type AttemptStatus,
} from './attempt.ts';
import type { Calibration } from './calibration.ts';
import type { Taskset } from './taskset.ts';
import type { FamilyId } from './types.ts';

/** What every attempt of a pilot shares: the service, the evaluator, the editor, the sizes (run-pilot and a worker). */
export type PilotAttemptContext = Pick<
  AttemptOptions,
  'service' | 'evaluator' | 'editor' | 'editorLabel' | 'itemsPerKind' | 'args'
> & { taskset: Taskset };

/** One planned attempt: an episode of the calibration and the attempt's id (attemptId). */
export type PlannedAttempt = { family: FamilyId; seed: number; id: string };

export type PilotOptions = PilotAttemptContext & {
  episodes: Calibration['episodes'];
  outputDir: string;
  workers: number;
  attempts?: number;
  /** Before any attempt runs: how many of them a previous run completed (kept as they are). */
  onStart?: (event: { total: number; kept: number }) => void;
  onProgress?: (event: {
    done: number;
    total: number;
    skipped: number;
    attempt: string;
    reward?: number;
    error?: string;
  }) => void;
};

/** An attempt that ended in an error (a refused patch, a checker's error): recorded as its result, not retried. */
export type FailedAttempt = { status: 'failed'; id: string; error: string };

export type PilotSummary = {
  format: 'iwibench-pilot/1';
  package_version: string;
  args: Record<string, unknown>;
  attempts: (AttemptStatus | FailedAttempt)[];
};

export async function runPilot(options: PilotOptions): Promise<PilotSummary> {
  const planned = options.episodes.flatMap((episode) =>
    Array.from({ length: options.attempts ?? 1 }, (_, index) => ({
      ...episode,
      id: attemptId(episode.family, episode.seed, options.editorLabel, index),
    })),
  );
  const results = new Map<string, PilotSummary['attempts'][number]>();
  const attemptDir = (id: string) => path.join(options.outputDir, 'attempts', id);
  options.onStart?.({ total: planned.length, kept: planned.filter((t) => completedAttempt(attemptDir(t.id))).length });
  let done = 0;
  let skipped = 0;
  let next = 0;
  const worker = async () => {
    while (next < planned.length) {
      const attempt = planned[next++]!;
      const dir = attemptDir(attempt.id);
      const complete = completedAttempt(dir);
      if (complete) {
        results.set(attempt.id, complete);
        skipped++;
        options.onProgress?.({
          done: ++done,
          total: planned.length,
          skipped,
          attempt: attempt.id,
          reward: complete.reward,
        });
        continue;
      }
      if (existsSync(dir)) await clearInterrupted(dir);
      try {
        const status = await runPilotAttempt(options, attempt, dir);
        results.set(attempt.id, status);
        options.onProgress?.({
          done: ++done,
          total: planned.length,
          skipped,
          attempt: attempt.id,
          reward: status.reward,
        });
      } catch (error) {
        const message = (error as Error).message;
        results.set(attempt.id, { status: 'failed', id: attempt.id, error: message });
        options.onProgress?.({ done: ++done, total: planned.length, skipped, attempt: attempt.id, error: message });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.workers) }, worker));
  const summary: PilotSummary = {
    format: 'iwibench-pilot/1',
    package_version: PACKAGE_VERSION,
    args: options.args ?? {},
    attempts: planned.map((t) => results.get(t.id)!),
  };
  writeJsonAtomic(path.join(options.outputDir, 'pilot.json'), summary);
  return summary;
}
/**
 * One attempt of a pilot, exactly as run-pilot runs it and a queue worker runs a job: the episode on the service, the
 * editor, the evaluation, everything written into `dir` (a worker's try folder, whose attempt.json names
 * `attempt.id`). A worker's `control` ends the attempt when it loses its job, and checks its lock before evaluation.
 */
export async function runPilotAttempt(
  { taskset, ...context }: PilotAttemptContext,
  attempt: PlannedAttempt,
  dir: string,
  control: Pick<AttemptOptions, 'beforeEvaluation' | 'signal' | 'episodeLeaseSeconds'> = {},
): Promise<AttemptStatus> {
  await runAttempt({ ...context, ...control, task: taskset.task(attempt), dir, id: attempt.id });
  return completedAttempt(dir)!;
}

/** "resumed: 8 of 10 attempts kept", when a previous run left completed attempts. */
export function resumeLine({ total, kept }: { total: number; kept: number }): string | undefined {
  return kept > 0
    ? `resumed: ${kept} of ${total} attempts kept (completed by an earlier run); ${total - kept} to run`
    : undefined;
}
