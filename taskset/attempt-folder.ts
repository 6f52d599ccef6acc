// An attempt's folder as others see it, without running one: its id, whether it is complete (attempt.json, written
// last), the evaluation processes it records, and the error of an attempt cut off from its episode. Apart from
// attempt.ts, so that a queue worker's modules load no evaluation or harness code they do not run (a test's worker
// process starts in a second less).
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isRunning, type ProcessIdentity } from './file-lock.ts';

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
 * The evaluation processes an attempt's folder records (`<out>.pid`, evaluation.ts): each by pid and start time, so
 * that a pid since reused by another process is not taken for it; an older file holding a bare pid, by pid alone.
 */
function recordedEvaluations(dir: string): ProcessIdentity[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.pid'))
    .flatMap((file) => {
      let recorded: ProcessIdentity | number;
      try {
        recorded = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as ProcessIdentity | number;
      } catch {
        return []; // gone with its folder meanwhile
      }
      const identity = typeof recorded === 'number' ? { pid: recorded, start: null } : recorded;
      return Number.isInteger(identity.pid) ? [identity] : [];
    });
}

/** An interrupted attempt's folder: wait for evaluation processes it may have left running, then clear it. */
export async function clearInterrupted(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  for (const identity of recordedEvaluations(dir)) while (isRunning(identity)) await sleep(200);
  rmSync(dir, { recursive: true, force: true });
}

/** How long an evaluation process may take to end on SIGTERM before it gets SIGKILL, and to end on that. */
const TERM_MS = 2000;
const KILL_MS = 3000;

/**
 * Ends the evaluation processes an attempt's folder records that still run: SIGTERM, then SIGKILL to any left after
 * TERM_MS; returns once none runs, or KILL_MS after the SIGKILL whatever the kernel does. `signal` stops the wait.
 */
export async function endEvaluations(dir: string, signal?: AbortSignal): Promise<void> {
  const start = Date.now();
  for (;;) {
    signal?.throwIfAborted();
    const running = recordedEvaluations(dir).filter(isRunning);
    const waited = Date.now() - start;
    if (running.length === 0 || waited > TERM_MS + KILL_MS) return;
    for (const { pid } of running) {
      try {
        process.kill(pid, waited < TERM_MS ? 'SIGTERM' : 'SIGKILL');
      } catch {
        // it ended meanwhile
      }
    }
    await sleep(100);
  }
}

/**
 * The service deleted the attempt's episode while the attempt ran: its lease ran out (the service, or this process,
 * stalled longer than the lease). The attempt was cut off, not failed: a queue worker runs it again, uncounted.
 */
export class EpisodeLost extends Error {
  override name = 'EpisodeLost';
}
