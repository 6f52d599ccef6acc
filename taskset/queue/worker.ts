// A worker: takes attempt jobs off the queue, `concurrency` at a time, and runs each with the function it is given
// (the pilot's own attempt function; a no-op in `bench queue`) into a try folder (tries.ts) that becomes
// OUT/attempts/<id> in one rename, after the fencing step (fence.ts), then completes the job with the attempt's
// status. A try that loses its job's lock stops at once and never commits; a job whose worker died is taken up again
// once its lock lapses and run from its start in a fresh try folder. On stop (SIGTERM) a worker takes no more jobs,
// lets the running ones finish within a grace period, then returns them to waiting, their tries not counted.
// The attempt's editor calls and evaluations run in other processes (the service, the editor API, fresh evaluation
// processes), so this event loop stays free to renew the job locks.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { UnrecoverableError, WaitingError, Worker, type Job, type RedisOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { writeJsonAtomic } from '../../core/files.ts';
import type { AttemptStatus } from '../attempt.ts';
import type { FailedAttempt } from '../pilot.ts';
import { QUEUE_NAME } from './connection.ts';
import { isTransient, TransientFailure } from './failures.ts';
import { claimCommit, releaseClaim } from './fence.ts';
import { parseAttemptJob, type AttemptJob } from './job.ts';
import { Lease, LeaseLost } from './lease.ts';
import { PhaseReader, type TryProgress } from './progress.ts';
import { clearDeadTries, finishedAttempt, HOST, sweepTries, TRY_RECORD, tryFolder, type TryRecord } from './tries.ts';

/** What a job completes with: the attempt's status, or its deterministic failure. */
export type JobResult = AttemptStatus | FailedAttempt;

/** What a running attempt is given: the signal that ends it, and the check to make before each step with effects. */
export type AttemptControl = { signal: AbortSignal; check: () => Promise<void> };

export type WorkerOptions = {
  connection: RedisOptions;
  outputDir: string;
  concurrency: number;
  /** How long a job's lock lasts unless renewed (renewed at half of it); a dead worker's job waits this long. */
  lockMs?: number;
  /** An attempt running longer fails with that reason, as a transient failure (retried with backoff). */
  attemptTimeoutMs?: number;
  /** Throws when this worker must not run the job (another target, other settings): the job fails with the reason. */
  accept?: (job: AttemptJob) => void;
  /** Runs one attempt into `dir` (a try folder) and returns its status. */
  run: (job: AttemptJob, dir: string, control: AttemptControl) => Promise<AttemptStatus>;
  onDone?: (event: { id: string; result: JobResult }) => void;
};

export const attemptFolder = (outputDir: string, id: string) => path.join(outputDir, 'attempts', id);

/** This worker as a job's processedBy records it: host (hostname and boot id) and pid. */
export const workerName = () => `${HOST}:${process.pid}`;

/** How often a running try's phase is sent to Redis, and stale tries are looked for. */
const PROGRESS_MS = 2000;
const SWEEP_MIN_MS = 5000;

export type AttemptWorker = {
  worker: Worker;
  /** Stop taking jobs; after `graceMs`, abort the running attempts and return their jobs to waiting. */
  stop: (graceMs: number) => Promise<void>;
};

export function startWorker(options: WorkerOptions): AttemptWorker {
  const leases = new Map<string, Lease>();
  const worker: Worker = new Worker(
    QUEUE_NAME,
    async (job: Job, token?: string) => {
      let attempt: AttemptJob;
      try {
        attempt = parseAttemptJob(job.data);
        options.accept?.(attempt);
      } catch (error) {
        throw new UnrecoverableError((error as Error).message); // failed at once, not retried
      }
      const client = (await worker.client) as unknown as Redis;
      const lease = new Lease(client, worker.toKey(`${job.id}:lock`), token!, options.attemptTimeoutMs);
      leases.set(job.id!, lease);
      try {
        return await processAttempt(options, attempt, lease, {
          commitKey: worker.toKey(`${job.id}:commit`),
          progress: (p) => job.updateProgress(p),
          requeue: async () => {
            await job.moveToWait(token);
            await client.hincrby(worker.toKey(job.id!), 'ats', -1); // this try is not counted as started either
          },
        });
      } finally {
        lease.release();
        leases.delete(job.id!);
      }
    },
    {
      connection: options.connection,
      concurrency: options.concurrency,
      name: workerName(), // each job's processedBy: where it runs
      ...(options.lockMs ? { lockDuration: options.lockMs, stalledInterval: options.lockMs } : {}),
      // A job re-run after its worker died is normal here (a killed worker); only one that stalls again and again
      // fails.
      maxStalledCount: 5,
    },
  );
  // BullMQ could not renew these locks: their tries stop at once (another worker may take the jobs).
  worker.on('lockRenewalFailed', (ids: string[]) => ids.forEach((id) => leases.get(id)?.end('lock')));
  worker.on('completed', (job, result: JobResult) => options.onDone?.({ id: job.id!, result }));
  worker.on('error', (error) => process.stderr.write(`worker: ${error.message}\n`));

  // Tries that can no longer commit and that no worker of theirs will clear (tries.ts).
  const attempts = path.join(options.outputDir, 'attempts');
  let sweeping = Promise.resolve();
  const sweep = () =>
    (sweeping = sweeping
      .then(async () => {
        const client = (await worker.client) as unknown as Redis;
        // A try may still commit while its job is locked; a job this queue does not know is another queue's.
        const live = async (id: string) =>
          (await client.exists(worker.toKey(`${id}:lock`))) === 1 || (await client.exists(worker.toKey(id))) === 0;
        await sweepTries(attempts, live);
      })
      .catch((error: Error) => void process.stderr.write(`worker: clearing stale tries: ${error.message}\n`)));
  void sweep();
  const sweeper = setInterval(sweep, Math.max(SWEEP_MIN_MS, options.lockMs ?? 30_000));
  sweeper.unref();

  const stop = async (graceMs: number) => {
    clearInterval(sweeper);
    const closed = worker.close(); // takes no more jobs; resolves once the running ones have ended
    const inTime = await Promise.race([closed.then(() => true), sleep(graceMs).then(() => false)]);
    if (!inTime) for (const lease of leases.values()) lease.end('shutdown');
    await closed;
    await sweeping;
  };
  return { worker, stop };
}

type JobHooks = {
  commitKey: string;
  progress: (p: TryProgress) => Promise<void>;
  /** Back to waiting, the lock released (a shutdown). */
  requeue: () => Promise<unknown>;
};

async function processAttempt(options: WorkerOptions, attempt: AttemptJob, lease: Lease, hooks: JobHooks) {
  const dir = attemptFolder(options.outputDir, attempt.id);
  // Completed by an earlier try whose completion did not reach Redis: its folder is the result.
  const done = finishedAttempt(dir, attempt.hash);
  if (done) return done;
  await clearDeadTries(dir);
  await lease.check();
  const temp = tryFolder(dir, lease.token);
  mkdirSync(temp, { recursive: true });
  const record: TryRecord = {
    id: attempt.id,
    hash: attempt.hash,
    host: HOST,
    pid: process.pid,
    started_at: new Date().toISOString(),
  };
  writeJsonAtomic(path.join(temp, TRY_RECORD), record, false);

  // The phase goes to Redis when it changes, every PROGRESS_MS at most (the worker and start are BullMQ's own
  // processedBy and processedOn: no write of ours).
  const reader = new PhaseReader(temp, attempt.settings.editor.max_turns);
  let sent = 'starting';
  const report = () => {
    const phase = reader.phase();
    if (phase !== sent)
      void hooks.progress({ phase }).then(
        () => (sent = phase),
        () => {},
      );
  };
  const ticker = setInterval(report, PROGRESS_MS);
  const running = options.run(attempt, temp, { signal: lease.signal, check: () => lease.check() });
  // Once the try has ended, however it ended, its folder goes unless it was renamed into place.
  const discard = () => void running.catch(() => {}).finally(() => rmSync(temp, { recursive: true, force: true }));
  try {
    let status: AttemptStatus;
    try {
      // The lease's end stops the try at once: the attempt winds down in the background (its episode is gone).
      status = await Promise.race([running, aborted(lease.signal)]);
      await lease.check();
    } catch (error) {
      discard();
      const ended = lease.ended;
      if (ended?.reason === 'shutdown') {
        await hooks.requeue();
        throw new WaitingError(); // BullMQ leaves the job where requeue put it: waiting, this try not counted
      }
      if (ended?.reason === 'timeout') throw new TransientFailure(ended.message);
      if (ended) throw ended;
      if (isTransient(error)) throw error; // BullMQ retries it with backoff; tries spent, the job keeps this error
      return { status: 'failed', id: attempt.id, error: (error as Error).message } satisfies FailedAttempt;
    }
    return await commit(lease, hooks.commitKey, temp, dir, status);
  } finally {
    clearInterval(ticker);
    reader.close();
  }
}

/** The fencing step, then the rename: only a try that still holds its job and is the first to claim it commits. */
async function commit(lease: Lease, commitKey: string, temp: string, dir: string, status: AttemptStatus) {
  const client = lease.client;
  const claim = { token: lease.token, host: HOST, pid: process.pid, result: status };
  const outcome = await claimCommit<AttemptStatus>(client, { lock: lease.lockKey, commit: commitKey }, claim);
  if (outcome.kind !== 'claimed') {
    rmSync(temp, { recursive: true, force: true });
    if (outcome.kind === 'lost') throw new LeaseLost('lock', "this worker lost the job's lock before its commit");
    return outcome.claim.result; // another try committed this attempt: its result is the job's
  }
  try {
    if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
    renameSync(temp, dir);
  } catch (error) {
    await releaseClaim(client, commitKey, lease.token);
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
  return status;
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    else signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

/**
 * Run until SIGINT or SIGTERM (or until `done` settles): then stop taking jobs and give the running ones `graceMs`
 * (AttemptWorker.stop). A second signal meanwhile exits at once.
 */
export async function runUntilSignal(
  stop: AttemptWorker['stop'],
  graceMs: number,
  done: Promise<unknown> = new Promise(() => {}),
): Promise<void> {
  const signals = ['SIGINT', 'SIGTERM'] as const;
  let first!: () => void;
  const signalled = new Promise<void>((resolve) => (first = resolve));
  const again = (signal: NodeJS.Signals) => {
    process.stderr.write(`worker: ${signal} again, exiting at once\n`);
    process.exit(1);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    for (const s of signals) process.off(s, onSignal).on(s, again);
    process.stderr.write(`worker: ${signal}: taking no more jobs; running ones have ${graceMs / 1000} s\n`);
    first();
  };
  for (const s of signals) process.on(s, onSignal);
  try {
    await Promise.race([signalled, done]);
    await stop(graceMs);
  } finally {
    for (const s of signals) process.off(s, onSignal).off(s, again);
  }
}
