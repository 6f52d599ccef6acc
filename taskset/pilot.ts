// A pilot: every selected episode of a calibration, attempted by one editor, with N editors running at once against
// one service. Resumable: completed attempts are kept as they are, interrupted ones (no attempt.json) are rerun
// after any evaluation process they left behind has ended; pilot.json lists every attempt.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { writeJsonAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { attemptId, clearInterrupted, completedAttempt, runAttempt, type AttemptStatus } from './attempt.ts';
import type { Calibration } from './calibration.ts';
import type { Evaluator } from './evaluation.ts';
import type { EditorConfig } from './harness/index.ts';
import type { ServiceEnv } from './service-client.ts';
import type { Taskset } from './taskset.ts';

export type PilotOptions = {
  episodes: Calibration['episodes'];
  service: ServiceEnv;
  /** Scores every attempt's patch (its pristine cache shared by the pilot's attempts). */
  evaluator: Evaluator;
  taskset: Taskset;
  editor: EditorConfig;
  editorLabel: string;
  outputDir: string;
  workers: number;
  attempts?: number;
  budgets?: Record<string, number>;
  itemsPerKind?: number;
  args?: Record<string, unknown>;
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

export type PilotSummary = {
  format: 'iwibench-pilot/1';
  package_version: string;
  args: Record<string, unknown>;
  attempts: (AttemptStatus | { status: 'failed'; id: string; error: string })[];
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
        const { results: r } = await runAttempt({
          task: options.taskset.task(attempt),
          service: options.service,
          evaluator: options.evaluator,
          editor: options.editor,
          editorLabel: options.editorLabel,
          dir,
          budgets: options.budgets,
          itemsPerKind: options.itemsPerKind,
          args: options.args,
        });
        results.set(attempt.id, completedAttempt(dir)!);
        options.onProgress?.({
          done: ++done,
          total: planned.length,
          skipped,
          attempt: attempt.id,
          reward: r.score.reward,
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
/** "resumed: 8 of 10 attempts kept", when a previous run left completed attempts. */
export function resumeLine({ total, kept }: { total: number; kept: number }): string | undefined {
  return kept > 0
    ? `resumed: ${kept} of ${total} attempts kept (completed by an earlier run); ${total - kept} to run`
    : undefined;
}
