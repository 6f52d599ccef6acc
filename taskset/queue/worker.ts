// A worker: takes attempt jobs off its lane of the queue (lanes.ts: the jobs of its service's arithmetic), `concurrency`
// at a time, and runs each with the function it is given (the pilot's own attempt function; a no-op in `bench queue`)
// into a try folder (tries.ts) that becomes OUT/attempts/<id> in one rename, after the fencing step (fence.ts), then
// completes the job with the attempt's status. A try that loses its job's lock, or cannot reach Redis for a lock
// period, stops at once and never commits; a job whose worker died is taken up again once its lock lapses and run from
// its start in a fresh try folder. On stop (SIGTERM) a worker takes no more jobs, lets the running ones finish within a
// grace period, then returns them to waiting, their tries not counted, and is done within `stopBoundMs` more.
// The attempt's editor calls and evaluations run in other processes (the service, the editor API, fresh evaluation
// processes), so this event loop stays free to renew the job locks.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { UnrecoverableError, WaitingError, Worker, type Job, type RedisOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { writeJsonAtomic } from '../../core/files.ts';
import type { Device, Precision } from '../../engine/index.ts';
import { EpisodeLost, type AttemptStatus } from '../attempt-folder.ts';
import type { FailedAttempt } from '../pilot.ts';
import { QUEUE_NAME } from './connection.ts';
import { isTransient, TransientFailure } from './failures.ts';
import {
  claimCommit,
  confirmClaim,
  releaseClaim,
  takeOverClaim,
  type ClaimOutcome,
  type CommitClaim,
  type CommitKeys,
} from './fence.ts';
import { parseAttemptJob, type AttemptJob } from './job.ts';
import { jobKey, laneName, listLanes, PREFIX, queueId } from './lanes.ts';
import { Lease, LeaseLost, UNREACHABLE } from './lease.ts';
import { PhaseReader, type TryProgress } from './progress.ts';
import { RedisUnreachable, RedisWatch, within } from './reach.ts';
import { workerArithmetic, type WorkerArithmetic } from './settings.ts';
import {
  clearDeadTries,
  finishedAttempt,
  HOST,
  removeTry,
  sweepTries,
  TRY_RECORD,
  tryFolder,
  type TryName,
  type TryRecord,
} from './tries.ts';

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
  /** How this worker's service computes (default bf16 on the CPU): it takes that arithmetic's lane only. */
  precision?: Precision;
  device?: Device;
  /** Throws when this worker must not run the job (another target, other settings): the job fails with the reason. */
  accept?: (job: AttemptJob) => void;
  /** Runs one attempt into `dir` (a try folder) and returns its status. */
  run: (job: AttemptJob, dir: string, control: AttemptControl) => Promise<AttemptStatus>;
  onDone?: (event: { id: string; result: JobResult }) => void;
  /** Where the worker's lines go (default: stderr, after `worker: `). */
  log?: (line: string) => void;
  /** A test's hook, between a try's commit claim and its rename (to kill the process there, restart Redis, …). */
  afterClaim?: (id: string) => void | Promise<void>;
};

export const attemptFolder = (outputDir: string, id: string) => path.join(outputDir, 'attempts', id);

/** This worker as a job's processedBy records it: host (hostname, boot id, PID namespace) and pid. */
export const workerName = () => `${HOST}:${process.pid}`;

/** BullMQ's default lock. */
export const DEFAULT_LOCK_MS = 30_000;
/** How often a running try's phase is sent to Redis, and stale tries are looked for (at least). */
const PROGRESS_MS = 2000;
const SWEEP_MIN_MS = 1000;

export type AttemptWorker = {
  worker: Worker;
  /** The lane (BullMQ queue) this worker takes jobs from. */
  lane: string;
  /** Stop taking jobs; after `graceMs`, abort the running attempts and return their jobs to waiting. */
  stop: (graceMs: number) => Promise<void>;
  /** How long `stop` takes at most beyond its grace period, Redis or not: two lock periods and a second. */
  stopBoundMs: number;
};

/** What the tries of one worker share. */
type Context = WorkerOptions & {
  lockMs: number;
  lane: string;
  queueId: () => Promise<string>;
  log: (line: string) => void;
};

export function startWorker(options: WorkerOptions): AttemptWorker {
  const lockMs = options.lockMs ?? DEFAULT_LOCK_MS;
  const here: WorkerArithmetic = workerArithmetic(options.precision, options.device);
  const lane = laneName(here.arithmetic);
  const log = options.log ?? ((line: string) => void process.stderr.write(`worker: ${line}\n`));
  const leases = new Map<string, Lease>();
  let id: Promise<string> | undefined; // the queue's, asked once
  const ctx: Context = {
    ...options,
    lockMs,
    lane,
    log,
    queueId: () =>
      (id ??= worker.client.then((c) =>
        within(lockMs, 'the queue id', queueId(c as unknown as Redis)).catch((error: Error) => {
          id = undefined;
          throw error;
        }),
      )),
  };
  const worker: Worker = new Worker(
    lane,
    async (job: Job, token?: string) => {
      let attempt: AttemptJob;
      try {
        attempt = parseAttemptJob(job.data);
        const differ = (['precision', 'device', 'arithmetic'] as const).filter((k) => attempt.settings[k] !== here[k]);
        if (differ.length > 0)
          throw new Error(
            `malformed job: it is on lane ${lane} (${here.arithmetic}), but its settings name ${differ.map((k) => `${k} ${attempt.settings[k]}`).join(', ')}`,
          );
        options.accept?.(attempt);
      } catch (error) {
        throw new UnrecoverableError((error as Error).message); // failed at once, not retried
      }
      const client = (await worker.client) as unknown as Redis;
      const lease = new Lease(client, worker.toKey(`${job.id}:lock`), token!, lockMs, options.attemptTimeoutMs);
      leases.set(job.id!, lease);
      try {
        return await processAttempt(ctx, attempt, lease, {
          commitKey: worker.toKey(`${job.id}:commit`),
          progress: (p) => job.updateProgress(p),
          requeue: async () => {
            try {
              await within(
                lockMs,
                'the requeue',
                (async () => {
                  await job.moveToWait(token);
                  await client.hincrby(worker.toKey(job.id!), 'ats', -1); // this try is not counted as started either
                })(),
              );
            } catch (error) {
              log(
                `${job.id}: not put back to waiting (${(error as Error).message}): BullMQ's stalled-job recovery will`,
              );
            }
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
      lockDuration: lockMs,
      stalledInterval: lockMs,
      // A job re-run after its worker died is normal here (a killed worker); only one that stalls again and again
      // fails.
      maxStalledCount: 5,
    },
  );
  // BullMQ could not renew these locks: their tries stop at once (another worker may take the jobs).
  worker.on('lockRenewalFailed', (ids: string[]) => ids.forEach((jobId) => leases.get(jobId)?.end('lock')));
  worker.on('completed', (job, result: JobResult) => options.onDone?.({ id: job.id!, result }));
  worker.on('error', (error) => log(error.message));
  // A split network raises no error: a worker that hears nothing from Redis for a lock period stops its tries.
  const watch = new RedisWatch(
    worker.client as unknown as Promise<Redis>,
    lockMs,
    () => leases.forEach((lease) => lease.end('lock', UNREACHABLE)),
    log,
  );

  // Tries that can no longer commit and that no worker of theirs will clear (tries.ts); and the jobs of other lanes
  // this worker leaves to others, said when they change.
  const attempts = path.join(options.outputDir, 'attempts');
  const sweepStop = new AbortController();
  let reported = '';
  let sweeping = Promise.resolve();
  const sweep = () =>
    (sweeping = sweeping
      .then(async () => {
        const client = (await worker.client) as unknown as Redis;
        const ask = <T>(work: Promise<T>) => within(lockMs, 'a sweep', work);
        const mine = await ctx.queueId();
        const live = async (t: TryName, record: TryRecord | undefined) => {
          const onLane = record?.lane ?? QUEUE_NAME; // a try of before lanes: the single queue's
          if ((await ask(client.exists(jobKey(onLane, t.id, ':lock')))) === 1) return true; // it may still commit
          if ((await ask(client.exists(jobKey(onLane, t.id)))) === 1) return false;
          // No job: `pilot clean` removed it if the try was this queue's; else it is another queue's, left to it.
          return record?.queue !== mine;
        };
        for (const name of await sweepTries(attempts, live, sweepStop.signal))
          log(`cleared the try folder ${name}: it can no longer commit`);
        const waiting: { arithmetic: string; count: number }[] = [];
        for (const other of await ask(listLanes(client))) {
          if (other.lane === lane) continue;
          const key = (list: string) => `${PREFIX}:${other.lane}:${list}`;
          const count = (await ask(client.llen(key('wait')))) + (await ask(client.zcard(key('prioritized'))));
          if (count > 0) waiting.push({ arithmetic: other.arithmetic, count });
        }
        // Said when the arithmetics waiting change, not at every job taken.
        const which = waiting.map((w) => w.arithmetic).join(', ');
        if (which && which !== reported)
          log(
            `jobs of another arithmetic wait (${waiting.map((w) => `${w.count} of ${w.arithmetic}`).join(', ')}), left to workers that compute it: this one computes ${here.arithmetic} (its service: --precision ${here.precision}, --device ${here.device})`,
          );
        reported = which;
      })
      .catch((error: Error) => {
        if (!sweepStop.signal.aborted) log(`clearing stale tries: ${error.message}`);
      }));
  void sweep();
  const sweeper = setInterval(sweep, Math.max(SWEEP_MIN_MS, lockMs));
  sweeper.unref();

  const stopBoundMs = 2 * lockMs + 1000;
  const stop = async (graceMs: number) => {
    clearInterval(sweeper);
    sweepStop.abort();
    const closed = worker.close(); // takes no more jobs; resolves once the running ones have ended
    if (!(await settlesWithin(closed, graceMs))) {
      for (const lease of leases.values()) lease.end('shutdown');
      // Each try requeues its job (a call bounded by a lock period), then BullMQ closes its connections.
      if (!(await settlesWithin(closed, stopBoundMs - 1000))) {
        log(`not closed ${stopBoundMs / 1000 - 1} s after the grace period: dropping its connections to Redis`);
        const blocking = (worker as unknown as { blockingConnection?: { client: Promise<Redis> } }).blockingConnection;
        await settlesWithin(Promise.all([worker.disconnect(), blocking?.client.then((c) => c.disconnect())]), 1000);
      }
    }
    watch.stop();
    await settlesWithin(sweeping, 1000);
  };
  return { worker, lane, stop, stopBoundMs };
}

type JobHooks = {
  commitKey: string;
  progress: (p: TryProgress) => Promise<void>;
  /** Back to waiting, the lock released, the try uncounted (a shutdown, a lost episode); bounded, never throws. */
  requeue: () => Promise<void>;
};

async function processAttempt(ctx: Context, attempt: AttemptJob, lease: Lease, hooks: JobHooks) {
  const dir = attemptFolder(ctx.outputDir, attempt.id);
  // Completed by an earlier try whose completion did not reach Redis: its folder is the result.
  const done = finishedAttempt(dir, attempt.hash);
  if (done) return done;
  let temp: string | undefined;
  let running: Promise<AttemptStatus> | undefined;
  let reader: PhaseReader | undefined;
  let ticker: NodeJS.Timeout | undefined;
  let status: AttemptStatus;
  try {
    // This attempt's dead tries on this host: cleared within this try's lease (a shutdown there requeues the job).
    await clearDeadTries(dir, lease.signal);
    await lease.check();
    temp = tryFolder(dir, lease.token);
    mkdirSync(temp, { recursive: true });
    const record: TryRecord = {
      id: attempt.id,
      hash: attempt.hash,
      host: HOST,
      pid: process.pid,
      started_at: new Date().toISOString(),
      queue: await ctx.queueId(),
      lane: ctx.lane,
    };
    writeJsonAtomic(path.join(temp, TRY_RECORD), record, false);

    // The phase goes to Redis when it changes, every PROGRESS_MS at most (the worker and start are BullMQ's own
    // processedBy and processedOn: no write of ours).
    const phases = (reader = new PhaseReader(temp, attempt.settings.editor.max_turns));
    let sent = 'starting';
    ticker = setInterval(() => {
      const phase = phases.phase();
      if (phase !== sent)
        void hooks.progress({ phase }).then(
          () => (sent = phase),
          () => {},
        );
    }, PROGRESS_MS);
    lease.signal.throwIfAborted();
    running = ctx.run(attempt, temp, { signal: lease.signal, check: () => lease.check() });
    // The lease's end stops the try at once: the attempt winds down in the background (its episode deleted, its
    // evaluation processes ended).
    status = await Promise.race([running, aborted(lease.signal)]);
    await lease.check();
  } catch (error) {
    if (error instanceof RedisUnreachable) lease.end('lock', UNREACHABLE);
    if (temp) discard(temp, running);
    const ended = lease.ended;
    if (ended?.reason === 'shutdown') {
      await hooks.requeue();
      throw new WaitingError(); // BullMQ leaves the job where requeue put it: waiting, this try not counted
    }
    if (ended?.reason === 'timeout') throw new TransientFailure(ended.message);
    if (ended) {
      ctx.log(`${attempt.id}: ${ended.message}`); // an operator sees why a job ran again
      throw ended;
    }
    if (error instanceof EpisodeLost) {
      ctx.log(`${attempt.id}: ${error.message}: back to waiting, this try not counted`);
      await hooks.requeue();
      throw new WaitingError();
    }
    if (isTransient(error)) throw error; // BullMQ retries it with backoff; tries spent, the job keeps this error
    return { status: 'failed', id: attempt.id, error: (error as Error).message } satisfies FailedAttempt;
  } finally {
    clearInterval(ticker);
    reader?.close();
  }
  return await commit(ctx, attempt, lease, hooks.commitKey, temp, status);
}

/** Once the try has ended, however it ended, its folder goes (it was not renamed into place). */
function discard(temp: string, running: Promise<unknown> | undefined): void {
  void (running ?? Promise.resolve()).catch(() => {}).finally(() => rmSync(temp, { recursive: true, force: true }));
}

/**
 * The fencing step, then the rename, then the confirmation: only a try that still holds its job and holds the claim
 * commits. A claim another try never confirmed, while this one holds the lock, is that try's who died or was cut off
 * between its claim and its rename: its try folder on this disk is renamed away first (so that it can never be
 * renamed into place), then its folder, if in place, is the attempt's, else the claim is taken over.
 */
async function commit(
  ctx: Context,
  attempt: AttemptJob,
  lease: Lease,
  commitKey: string,
  temp: string,
  status: AttemptStatus,
): Promise<AttemptStatus> {
  const dir = attemptFolder(ctx.outputDir, attempt.id);
  const client = lease.client;
  const keys: CommitKeys = { lock: lease.lockKey, commit: commitKey };
  const claim: CommitClaim<AttemptStatus> = { token: lease.token, host: HOST, pid: process.pid, result: status };
  const ask = <T>(what: string, work: Promise<T>) => within(ctx.lockMs, what, work);
  // Our claim back if it is still ours and unconfirmed (one may have landed although its reply was lost), then out.
  const giveUp = async (message: string): Promise<never> => {
    await ask('the claim release', releaseClaim(client, keys, claim)).catch(() => {});
    rmSync(temp, { recursive: true, force: true });
    throw new LeaseLost('lock', message);
  };
  for (;;) {
    let outcome: ClaimOutcome<AttemptStatus>;
    try {
      outcome = await ask('the commit claim', claimCommit(client, keys, claim));
    } catch (error) {
      if (error instanceof RedisUnreachable) return await giveUp(`${UNREACHABLE} (${error.message})`);
      throw error;
    }
    if (outcome.kind === 'claimed') break;
    if (outcome.kind === 'lost') return await giveUp("this worker lost the job's lock before its commit");
    if (outcome.kind === 'taken') {
      rmSync(temp, { recursive: true, force: true });
      return outcome.claim.result; // another try committed this attempt: its result is the job's
    }
    const held = outcome.claim;
    const theirs = `try ${held.host} pid ${held.pid}`;
    await fenceTry(dir, held, ctx.log);
    const inPlace = finishedAttempt(dir, attempt.hash);
    if (inPlace) {
      ctx.log(
        `${attempt.id}: ${theirs} renamed its folder into place but never confirmed it: that folder is the result`,
      );
      rmSync(temp, { recursive: true, force: true });
      return inPlace;
    }
    const swapped = await ask('the claim takeover', takeOverClaim(client, keys, outcome.raw, claim)).catch(
      (error: Error) => error,
    );
    if (swapped instanceof Error) return await giveUp(`${UNREACHABLE} (${swapped.message})`);
    if (swapped === 'lost') return await giveUp("this worker lost the job's lock before its commit");
    if (swapped === 'ok') {
      ctx.log(
        `${attempt.id}: took over the commit claim of ${theirs}: it holds no lock and its folder is not in place`,
      );
      break;
    }
    // 'changed': the claim moved meanwhile; look again.
  }
  await ctx.afterClaim?.(attempt.id);
  try {
    // A folder in place of other settings (an older hash) is stale: moved aside. One of these settings is never
    // replaced: rename(2) refuses a target that is not empty.
    if (existsSync(dir) && !finishedAttempt(dir, attempt.hash)) {
      const stale = tryFolder(dir, `${lease.token}:stale`);
      renameSync(dir, stale);
      rmSync(stale, { recursive: true, force: true });
    }
    renameSync(temp, dir);
  } catch (error) {
    await ask('the claim release', releaseClaim(client, keys, claim)).catch(() => {});
    rmSync(temp, { recursive: true, force: true });
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new LeaseLost(
        'lock',
        'a try that took this commit over (this worker was cut off past its lock) fenced its folder',
      );
    throw error;
  }
  const confirming = confirmClaim(client, keys, claim);
  const confirmed = await ask('the commit confirmation', confirming).catch((error: Error) => error);
  // Refused: taken over between this claim and this rename by a try whose folder is on another disk (on this one it
  // would have fenced ours), so this folder is not the attempt's. A refusal that comes late is acted on then.
  const superseded = async () => {
    const held = await ask('the claim', client.get(commitKey)).catch(() => null);
    return held !== null && (JSON.parse(held) as CommitClaim<AttemptStatus>).token !== claim.token;
  };
  const outOfPlace = () => {
    renameSync(dir, temp);
    rmSync(temp, { recursive: true, force: true });
    ctx.log(`${attempt.id}: another try took this commit over while this worker was cut off: its folder is removed`);
  };
  if (confirmed === 'changed' && (await superseded())) {
    outOfPlace();
    throw new LeaseLost('lock', 'another try took this commit over while this worker was cut off past its lock');
  }
  if (confirmed instanceof Error) {
    ctx.log(`${attempt.id}: commit not confirmed yet (${confirmed.message}); its folder is in place`);
    void confirming
      .then(async (late) => {
        if (late === 'changed' && (await superseded())) outOfPlace();
      })
      .catch(() => {}); // never answered: the folder stays, and is the result
  }
  return status;
}

/**
 * Another try's folder removed, renamed away first (tries.ts, removeTry), so that it can never be renamed into place;
 * nothing if it is not on this disk.
 */
async function fenceTry(dir: string, held: CommitClaim<unknown>, log: (line: string) => void): Promise<void> {
  if (await removeTry(tryFolder(dir, held.token, held.host, held.pid), false))
    log(`${path.basename(dir)}: removed the try folder of try ${held.host} pid ${held.pid}: it can no longer commit`);
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason as Error);
    else signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
  });
}

/** Whether `work` settles within `ms` (its timer cleared once it does, so it holds no process open). */
async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Run until SIGINT or SIGTERM (or until `done` settles): then stop taking jobs and give the running ones `graceMs`
 * (AttemptWorker.stop). A second signal meanwhile exits at once; so does a stop that overruns its bound (with a line:
 * a job not requeued is left for BullMQ's stalled-job recovery).
 */
export async function runUntilSignal(
  running: Pick<AttemptWorker, 'stop' | 'stopBoundMs'>,
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
    // Whatever hangs (Redis gone, a connection that never closes), the process ends within this bound.
    const boundMs = graceMs + STOP_SLACK_MS + running.stopBoundMs;
    setTimeout(() => {
      process.stderr.write(
        `worker: not stopped ${boundMs / 1000} s after ${signal}: exiting; a job not requeued is left for BullMQ's stalled-job recovery\n`,
      );
      process.exit(1);
    }, boundMs).unref();
    first();
  };
  for (const s of signals) process.on(s, onSignal);
  try {
    await Promise.race([signalled, done]);
    await running.stop(graceMs);
  } finally {
    for (const s of signals) process.off(s, onSignal).off(s, again);
  }
}

/** What a command may take after its worker has stopped (closing its queue handle, stopping a service it started). */
export const STOP_SLACK_MS = 5000;
