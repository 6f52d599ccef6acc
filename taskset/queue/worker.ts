// A worker: takes attempt jobs off the queue, `concurrency` at a time, and runs each with the function it is given
// (the pilot's own attempt function; a no-op in `bench queue`) into a temp folder that becomes
// OUT/attempts/<id> in one rename, then completes the job with the attempt's status. A job whose worker died is taken
// up again once its lock lapses and run from its start in a fresh temp folder; the dead one's half folder is never
// read. The attempt's editor calls and evaluations run in other processes (the service, the editor API, fresh
// evaluation processes), so this event loop stays free to renew the job locks.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { UnrecoverableError, Worker, type Job, type RedisOptions } from 'bullmq';
import { writeFolderAtomic } from '../../core/files.ts';
import { processExists } from '../../core/process.ts';
import { clearInterrupted, completedAttempt, type AttemptStatus } from '../attempt.ts';
import type { FailedAttempt } from '../pilot.ts';
import { QUEUE_NAME } from './connection.ts';
import { isTransient } from './failures.ts';
import { parseAttemptJob, type AttemptJob } from './job.ts';

/** What a job completes with: the attempt's status, or its deterministic failure. */
export type JobResult = AttemptStatus | FailedAttempt;

export type WorkerOptions = {
  connection: RedisOptions;
  outputDir: string;
  concurrency: number;
  /** How long a job's lock lasts unless renewed (renewed at half of it); a dead worker's job waits this long. */
  lockMs?: number;
  /** Runs one attempt into `dir` (a temp folder) and returns its status. */
  run: (job: AttemptJob, dir: string) => Promise<AttemptStatus>;
  onDone?: (event: { id: string; result: JobResult }) => void;
};

export const attemptFolder = (outputDir: string, id: string) => path.join(outputDir, 'attempts', id);

/** The job processor (exported for a direct call, the no-op benchmark's baseline). */
export async function processAttemptJob(options: Pick<WorkerOptions, 'outputDir' | 'run'>, data: unknown) {
  let job: AttemptJob;
  try {
    job = parseAttemptJob(data);
  } catch (error) {
    throw new UnrecoverableError((error as Error).message); // failed at once, not retried
  }
  const dir = attemptFolder(options.outputDir, job.id);
  // Completed by an earlier try whose completion did not reach Redis: its folder is the result.
  const done = completedAttempt(dir);
  if (done) return done;
  await clearDeadTries(dir);
  try {
    return await writeFolderAtomic(dir, (temp) => options.run(job, temp));
  } catch (error) {
    if (isTransient(error)) throw error; // BullMQ retries it with backoff; tries spent, the job keeps this error
    return { status: 'failed', id: job.id, error: (error as Error).message } satisfies FailedAttempt;
  }
}

/**
 * The temp folders earlier tries of this attempt left when their worker died: cleared once the evaluation processes
 * they started have ended (clearInterrupted), never read. A live worker's (this machine's) is left alone.
 */
async function clearDeadTries(dir: string): Promise<void> {
  const parent = path.dirname(dir);
  if (!existsSync(parent)) return;
  const prefix = `${path.basename(dir)}.partial-`;
  for (const name of readdirSync(parent).filter((n) => n.startsWith(prefix))) {
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    if (Number.isInteger(pid) && pid !== process.pid && !processExists(pid))
      await clearInterrupted(path.join(parent, name));
  }
}

export function startWorker(options: WorkerOptions): Worker {
  const worker = new Worker(QUEUE_NAME, (job: Job) => processAttemptJob(options, job.data), {
    connection: options.connection,
    concurrency: options.concurrency,
    ...(options.lockMs ? { lockDuration: options.lockMs, stalledInterval: options.lockMs } : {}),
    // A job re-run after its worker died is normal here (a killed worker); only a job that stalls again and again fails.
    maxStalledCount: 5,
  });
  worker.on('completed', (job, result: JobResult) => options.onDone?.({ id: job.id!, result }));
  worker.on('error', (error) => process.stderr.write(`worker: ${error.message}\n`));
  return worker;
}
