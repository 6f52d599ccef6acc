// The queue of attempts on a real Redis (scripts/redis-server.ts, one for the file; each case its own database and
// folder, so the cases run at once: most wait out locks; the one that restarts Redis has its own), workers in this
// process: enqueue twice gives one job per attempt, and other settings (another precision too) are refused with the
// fields named, a bad precision before anything; status rows per family and editor; a worker takes the jobs of its own
// arithmetic only and says why it leaves the others; a malformed job fails at once with its reason; a deterministic
// failure is recorded and not retried, a transient one (a timeout too) is retried a bounded number of times and keeps
// its last error, a lost episode is retried uncounted; a try whose lock is taken, or that cannot reach Redis for a lock
// period (a network split, through a proxy), stops at once and never commits; the commit's fencing step, and every way
// a claim can be left without its folder: a claimant cut off past its lock (its folder fenced, its claim taken over), a
// claim's reply lost (a proxy drops it), Redis restarted between the claim and the rename; a shutdown while dead tries
// are cleared requeues uncounted; which tries a worker clears (a cleaned job's too); a finished folder is reused only
// for its own settings; retry, clean, pause and resume; a Redis that evicts, or does not answer, is refused within the
// bound; TLS, an ACL user and a password; durations.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Queue, type Job, type RedisOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeJsonAtomic } from '../../core/files.ts';
import { arithmeticName } from '../../engine/index.ts';
import { evaluationProgress } from '../../service/evaluation-progress.ts';
import { attemptId, completedAttempt, EpisodeLost, type AttemptStatus } from '../../taskset/attempt.ts';
import { isRunning, processIdentity } from '../../taskset/file-lock.ts';
import type { EditorRunResult } from '../../taskset/harness/index.ts';
import { checkQueue, queueConnection } from '../../taskset/queue/connection.ts';
import { MAX_TIMER_MS, parseDuration } from '../../taskset/queue/duration.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { cleanFinished, pauseQueue, retryFailed } from '../../taskset/queue/operate.ts';
import { queueStatus, statusText } from '../../taskset/queue/status.ts';
import { TransientFailure, isTransient, throwIfTransientEditorError } from '../../taskset/queue/failures.ts';
import { claimCommit, confirmClaim, releaseClaim, takeOverClaim, type CommitClaim } from '../../taskset/queue/fence.ts';
import { attemptJob, type AttemptJob } from '../../taskset/queue/job.ts';
import { laneName, LANES_KEY, queueId } from '../../taskset/queue/lanes.ts';
import { UNREACHABLE } from '../../taskset/queue/lease.ts';
import { attemptSettings, settingsHash } from '../../taskset/queue/settings.ts';
import { HOST, sweepTries, TRY_RECORD, tryFolder, type TryRecord } from '../../taskset/queue/tries.ts';
import { startWorker, type AttemptWorker, type JobResult, type WorkerOptions } from '../../taskset/queue/worker.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';
import { startCliHost, type CliHost, type CliRun } from '../cli-host.ts';
import { startTcpProxy } from './tcp-proxy.ts';
import { parseCommand } from '../../scripts/args.ts';
import { command as enqueueCommand } from '../../scripts/pilot/enqueue.ts';
import { command as statusCommand } from '../../scripts/pilot/status.ts';
import { command as workerCommand } from '../../scripts/pilot/worker.ts';
import { onQueue, QUEUE_FLAG_DEFAULTS, type QueueCommandFlags } from '../../scripts/pilot/queue-flags.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
/** A command line, run in the file's command host (cli-host.ts: one process, its modules loaded once). */
const cli = (args: string[]): Promise<CliRun> => host.run(args);

let redis: RedisHandle;
let work: string;
let host: CliHost;
const queues: Queue[] = [];
const workers: AttemptWorker[] = [];
beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-'));
  [redis, host] = await Promise.all([startRedis(), startCliHost(work)]);
});
afterAll(async () => {
  host?.stop();
  for (const w of workers) await w.stop(0);
  for (const q of queues) await q.close();
  await redis?.stop();
});

/** The lane of the default arithmetic (bf16 on the CPU) on database `db`, registered as enqueue registers it. */
function openQueue(db: number, arithmetic = SETTINGS.arithmetic, server = redis): Queue {
  const lane = laneName(arithmetic);
  const queue = new Queue(lane, { connection: queueConnection({ queue: server.url(db) }) });
  void queue.client.then((c) => (c as unknown as Redis).hset(LANES_KEY, lane, arithmetic));
  queues.push(queue);
  return queue;
}

/** A worker in this process on database `db` (or `url`); its lines are kept in `logs`. */
function worker(
  db: number,
  options: Omit<WorkerOptions, 'connection'>,
  url = redis.url(db),
): AttemptWorker & { logs: string[] } {
  const logs: string[] = [];
  const w = startWorker({ connection: queueConnection({ queue: url }), log: (line) => logs.push(line), ...options });
  workers.push(w);
  return { ...w, logs };
}

/** Once the try's lease has ended (at once if it has). */
const ended = (signal: AbortSignal) =>
  new Promise((resolve) => (signal.aborted ? resolve(undefined) : signal.addEventListener('abort', resolve)));

/** Until `check` holds (each case's own timeout bounds the wait). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(50);
}

/** The job once it has finished (completed or failed for good). */
async function finished(queue: Queue, id: string): Promise<Job> {
  for (;;) {
    const state = await queue.getJobState(id);
    if (state === 'completed' || state === 'failed') return (await queue.getJob(id))!; // read after it finished
    await sleep(50);
  }
}

const TARGET = { model: 'toy/iwibench-toy', revision: 'r1' };
const SETTINGS = attemptSettings({ model: 'builtin:noop' }, { itemsPerKind: 1, target: TARGET });
const job = (family: AttemptJob['family'], seed: number, repeat = 0) =>
  attemptJob({ family, seed }, 'builtin:noop', repeat, SETTINGS, 'calibration.json');

/** A complete attempt written into `dir` (what the pilot's attempt leaves), with `reward`. */
function complete(j: AttemptJob, dir: string, reward = 0.5): AttemptStatus {
  const status: AttemptStatus = {
    status: 'complete',
    id: j.id,
    family: j.family,
    seed: j.seed,
    editor: j.editor_label,
    reward,
    stop_reason: 'final_reply',
    finished_at: new Date(0).toISOString(),
  };
  writeFileSync(path.join(dir, 'trace.jsonl'), '{}\n');
  writeJsonAtomic(path.join(dir, 'attempt.json'), status);
  return status;
}

describe.concurrent('pilot enqueue', () => {
  it('adds one job per (episode, editor, repeat), its id readable with its settings hash; again adds nothing; other settings are refused, naming the fields', async () => {
    const calibration = path.join(work, 'calibration.json');
    writeFileSync(
      calibration,
      JSON.stringify({
        episodes: [
          { family: 'local_factual_update', seed: 0, params_key: 'x' },
          { family: 'lexical_inhibition', seed: 3, params_key: 'y' },
        ],
      }),
    );
    const args = ['pilot', 'enqueue', calibration, '--queue', redis.url(1), '--model-dir', TOY_TARGET_DIR];
    const more = ['--editor-model', 'builtin:noop', '--editor-model', 'builtin:demo', '--repeats', '2'];
    // A bad precision is refused as the command parses its flags, before the queue is touched.
    expect(() => parseCommand([calibration, '--queue', redis.url(1), '--precision', 'bogus'], enqueueCommand)).toThrow(
      '--precision must be bf16 or float32, got "bogus"',
    );
    // It fetches nothing, so it takes no --offline.
    expect(() => parseCommand([calibration, '--queue', redis.url(1), '--offline'], enqueueCommand)).toThrow(
      'unknown flag --offline',
    );
    const first = await cli([...args, ...more, '--json']);
    expect(first.stderr).toBe('');
    const bf16 = arithmeticName('bf16', 'cpu');
    expect(JSON.parse(first.stdout)).toMatchObject({ attempts: 8, added: 8, already_queued: 0, arithmetic: bf16 });
    // Again (adds nothing), and with another reasoning effort, other items per kind, another precision (refused, the
    // fields named, nothing added): at once, since neither adds a job.
    const [second, changed] = await Promise.all([
      cli([...args, ...more]),
      cli([...args, ...more, '--reasoning-effort', 'high', '--items-per-kind', '2', '--precision', 'float32']),
    ]);
    expect(second.stdout).toBe(
      `0 of 8 attempts added to ${redis.url(1)} (arithmetic ${bf16}); 8 already queued (left as they are, nothing added for them)\n`,
    );
    const jobs = await openQueue(1).getJobs(['waiting']);
    // What decides the result is in the id: the precision, the device and the arithmetic they give.
    for (const j of jobs) expect(j.data.settings).toMatchObject({ precision: 'bf16', device: 'cpu', arithmetic: bf16 });
    const readable = ['local_factual_update', 'lexical_inhibition'].flatMap((family) =>
      ['builtin:noop', 'builtin:demo'].flatMap((label) =>
        [0, 1].map((k) => attemptId(family, family === 'local_factual_update' ? 0 : 3, label, k)),
      ),
    );
    expect(jobs.map((j) => j.id!.replace(/-h[0-9a-f]{8}$/, '')).sort()).toEqual(readable.sort());
    for (const j of jobs) expect(j.id).toBe(`${j.id!.replace(/-h[0-9a-f]{8}$/, '')}-h${settingsHash(j.data.settings)}`);

    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain('refused: 8 attempt(s) already queued with other settings');
    expect(changed.stderr).toContain('editor.reasoning_effort: (none) → "high"');
    expect(changed.stderr).toContain('items_per_kind: 0 → 2');
    expect(changed.stderr).toContain('precision: "bf16" → "float32"');
    expect(changed.stderr).toContain(`arithmetic: "${bf16}" → "${arithmeticName('float32', 'cpu')}"`);
    expect((await openQueue(1).getJobCounts('waiting')).waiting).toBe(8);

    // The rows are what was enqueued: each family with each editor, two repeats waiting (`pilot status --json`
    // prints this document, and the text below).
    const queued = await queueStatus(queueConnection({ queue: redis.url(1) }));
    const text = statusText(queued);
    expect(queued.counts).toEqual({ waiting: 8, active: 0, done: 0, failed: 0 });
    const rows = ['lexical_inhibition', 'local_factual_update'].flatMap((family) =>
      ['builtin:demo', 'builtin:noop'].map((editor) => ({ family, editor, waiting: 2, active: 0, done: 0, failed: 0 })),
    );
    expect(queued.rows).toEqual(rows);
    for (const row of rows) expect(text).toMatch(new RegExp(`${row.family} +${row.editor} +2 +0 +0 +0\n`));
  });

  it('refuses a bad queue URL, a password in it, a Redis that does not answer or may evict, a worker’s lease shorter than two locks or a timer past Node’s limit, before enqueuing anything', async () => {
    // The worker's flags, as its command parses them (in this process: what it checks before anything).
    const worker =
      (...args: string[]) =>
      () =>
        parseCommand(['--queue', redis.url(0), ...args], workerCommand);
    expect(worker('--lock-seconds', '30', '--episode-lease-seconds', '45')).toThrow(
      '--episode-lease-seconds (45) must be at least twice --lock-seconds (30)',
    );
    expect(worker('--grace-seconds', '3000000')).toThrow("--grace-seconds must be 0…2147483 (Node's timer limit)");
    expect(worker('--lock-seconds', '30', '--episode-lease-seconds', '60')).not.toThrow();
    // A command's way to the queue (queue-flags.ts, onQueue, as every pilot command but the worker takes it), in this
    // process: each refusal comes before its work; and the command line's own refusal of a typo.
    const queued: string[] = [];
    const on = (queue: string, more: Partial<QueueCommandFlags> = {}) =>
      onQueue({ ...QUEUE_FLAG_DEFAULTS, queue, ...more }, async () => void queued.push(queue)).then(
        () => '',
        (error: Error) => error.message,
      );
    expect(await on('http://127.0.0.1:1/0')).toContain('--queue must start with redis:// or rediss:// (TLS)');
    expect(await on(`redis://:hunter2@127.0.0.1:${redis.port}/0`)).toContain('name it with --queue-password-env');
    expect(await on(redis.url(0), { 'queue-password-env': 'IWIBENCH_NO_SUCH_VAR' })).toContain(
      '$IWIBENCH_NO_SUCH_VAR is not set',
    );
    expect(await on('redis://127.0.0.1:1/0')).toContain('no Redis answers at redis://127.0.0.1:1/0');
    const admin = new Redis({ port: redis.port, host: '127.0.0.1' });
    try {
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const evicting = await on(redis.url(0));
      expect(evicting).toContain('has maxmemory-policy allkeys-lru');
      expect(evicting).toContain('set "maxmemory-policy noeviction" in its config file');
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      admin.disconnect();
    }
    expect(queued).toEqual([]);
    // A process of its own, as `npx iwibench` runs (it loads no command).
    const typo = await exec(process.execPath, [CLI, 'pilot', 'enque']).then(
      () => ({ code: 0, stderr: '' }),
      (e: CliRun) => e,
    );
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('did you mean enqueue?');
    expect((await openQueue(0).getJobCounts()).waiting).toBe(0);
  });

  it('enqueue, status and the operator commands give up within their bound, with one line, when Redis stops answering', async () => {
    const frozen = await startRedis();
    try {
      const url = frozen.url(0);
      process.kill(frozen.pid(), 'SIGSTOP'); // connections are accepted, nothing is answered
      const bound = ['--queue', url, '--queue-timeout-seconds', '2'];
      // One command as a process, exit code and all; the others' way to the queue in this process (onQueue, the same
      // bounded connection and bound), each with its own work.
      const flags = { ...QUEUE_FLAG_DEFAULTS, queue: url, 'queue-timeout-seconds': 2 };
      const job = attemptJob({ family: 'local_factual_update', seed: 0 }, 'x', 0, SETTINGS, 'none.json');
      const [status, ...others] = await Promise.all([
        cli(['pilot', 'status', ...bound]),
        ...[
          async (c: RedisOptions) => void (await enqueueAttempts(c, [job], { retries: 0, backoffMs: 10 })),
          (c: RedisOptions) => pauseQueue(c, true),
        ].map((work) =>
          onQueue(flags, work).then(
            () => '',
            (error: Error) => error.message,
          ),
        ),
      ]);
      expect(status!.code).toBe(1);
      for (const message of [status!.stderr, ...others]) {
        expect(message).toContain(`no Redis answers at ${url}`);
        expect(message).toContain('did not answer within 2 s');
        expect(message.trim().split('\n')).toHaveLength(1);
      }
    } finally {
      process.kill(frozen.pid(), 'SIGCONT');
      await frozen.stop();
    }
  });
});

describe.concurrent('a worker', () => {
  it('fails a malformed job at once with a clear reason, without running anything', async () => {
    const queue = openQueue(2);
    const good = job('local_factual_update', 0);
    await queue.add('bad', { ...good, seed: -1, api_key: 'sk-never' }, { jobId: 'bad', attempts: 3 });
    await queue.add('wrong-id', { ...good, id: 'something-else' }, { jobId: 'wrong-id', attempts: 3 });
    const forged = { ...good, settings: { ...good.settings, items_per_kind: 0 } };
    await queue.add('forged', forged, { jobId: 'forged', attempts: 3 });
    const runs: string[] = [];
    worker(2, {
      outputDir: path.join(work, 'malformed'),
      concurrency: 1,
      run: async (j) => (runs.push(j.id), Promise.reject(new Error('never'))),
    });
    const bad = await finished(queue, 'bad');
    expect(bad.failedReason).toBe(
      'malformed job (not iwibench-attempt-job/3): / must NOT have additional properties; /seed must be >= 0',
    );
    expect(bad.attemptsMade).toBe(1); // not retried
    const wrong = await finished(queue, 'wrong-id');
    expect(wrong.failedReason).toBe(`malformed job: its id "something-else" is not its attempt's id "${good.id}"`);
    const hash = settingsHash(forged.settings);
    expect((await finished(queue, 'forged')).failedReason).toBe(
      `malformed job: its hash ${good.hash} is not its settings' ${hash}`,
    );
    expect(runs).toEqual([]);
    const status = statusText(await queueStatus(queueConnection({ queue: redis.url(2) })));
    expect(status).toContain('bad: malformed job');
    expect(status).toMatch(/\[#+\] 3\/3 finished: 0 done, 3 failed/);
  });

  it('records a deterministic failure, retries a transient one and a timeout a bounded number of times, runs a lost episode again uncounted, and writes a whole folder', async () => {
    const connection = queueConnection({ queue: redis.url(3) });
    const queue = openQueue(3);
    const outputDir = path.join(work, 'kinds');
    const [ok, refused, flaky, hung, lost] = [
      job('local_factual_update', 0),
      job('local_factual_update', 1),
      job('alias_acquisition', 2),
      job('alias_acquisition', 3),
      job('alias_acquisition', 4),
    ];
    await enqueueAttempts(connection, [ok, refused, flaky, hung, lost], { retries: 2, backoffMs: 10 });
    const calls: Record<string, number> = {};
    const { logs } = worker(3, {
      outputDir,
      concurrency: 2,
      attemptTimeoutMs: 300,
      run: async (j, dir, { signal }) => {
        calls[j.id] = (calls[j.id] ?? 0) + 1;
        writeFileSync(path.join(dir, 'trace.jsonl'), '{}\n');
        if (j.id === refused.id) throw new Error('patch refused: 0 parameters changed');
        if (j.id === flaky.id) throw new TransientFailure(`the editor API failed (try ${calls[j.id]})`);
        if (j.id === hung.id) await ended(signal);
        // What runAttempt throws when the service deleted the episode under it (its lease ran out).
        if (j.id === lost.id && calls[j.id] === 1) throw new EpisodeLost("the service deleted this attempt's episode");
        return complete(j, dir);
      },
    });
    const done = await finished(queue, ok.id);
    expect(done.returnvalue).toMatchObject({ status: 'complete', id: ok.id, reward: 0.5 });
    const folder = path.join(outputDir, 'attempts', ok.id);
    expect(completedAttempt(folder)).toEqual(done.returnvalue);
    const record = JSON.parse(readFileSync(path.join(folder, TRY_RECORD), 'utf8')) as TryRecord;
    expect(record).toMatchObject({ id: ok.id, hash: ok.hash, pid: process.pid });

    const recorded = await finished(queue, refused.id);
    expect(await recorded.getState()).toBe('completed');
    expect(recorded.returnvalue as JobResult).toEqual({
      status: 'failed',
      id: refused.id,
      error: 'patch refused: 0 parameters changed',
    });
    expect(calls[refused.id]).toBe(1);

    const spent = await finished(queue, flaky.id);
    expect(await spent.getState()).toBe('failed');
    expect(calls[flaky.id]).toBe(3); // the first try and 2 retries
    expect(spent.failedReason).toBe('the editor API failed (try 3)');

    const timedOut = await finished(queue, hung.id);
    expect(await timedOut.getState()).toBe('failed');
    expect(calls[hung.id]).toBe(3);
    expect(timedOut.failedReason).toBe('the attempt ran past --attempt-timeout (300 ms)');

    // A lost try is not counted: the job completes on its second run as on a first.
    const rerun = await finished(queue, lost.id);
    expect(rerun.returnvalue).toMatchObject({ status: 'complete', id: lost.id });
    expect(calls[lost.id]).toBe(2);
    expect(rerun.attemptsMade).toBe(1);
    expect(logs).toContain(
      `${lost.id}: the service deleted this attempt's episode: back to waiting, this try not counted`,
    );

    // Only the completed attempts have a folder; the failed tries' folders are gone.
    await sleep(100);
    expect(readdirSync(path.join(outputDir, 'attempts')).sort()).toEqual([ok.id, lost.id].sort());
    const status = await queueStatus(connection);
    expect(status.counts).toEqual({ waiting: 0, active: 0, done: 2, failed: 3 });
    expect(status.failures.map((f: { id: string }) => f.id)).toEqual([refused.id, flaky.id, hung.id].sort());
  });

  it('a try whose lock is taken stops at once and never commits; the job is run again and committed once', async () => {
    const queue = openQueue(4);
    const outputDir = path.join(work, 'lock-lost');
    const one = job('local_factual_update', 7);
    await enqueueAttempts(queueConnection({ queue: redis.url(4) }), [one], { retries: 0, backoffMs: 10 });
    const tries: { aborted?: number; started: number }[] = [];
    const running = worker(4, {
      outputDir,
      concurrency: 1,
      lockMs: 1000,
      run: async (j, dir, { signal }) => {
        const t = { started: performance.now() } as (typeof tries)[number];
        tries.push(t);
        if (tries.length === 1) {
          await ended(signal);
          t.aborted = performance.now();
          await sleep(300); // the attempt winds down; its folder must still never become the attempt's
        }
        return complete(j, dir, tries.length);
      },
    });
    for (;;) {
      if (tries.length === 1 && (await queue.getActiveCount()) === 1) break;
      await sleep(20);
    }
    // Another "worker" takes the lock (as after a partition): the renewal fails, the try stops.
    const admin = new Redis({ port: redis.port, host: '127.0.0.1', db: 4 });
    const taken = performance.now();
    await admin.set(queue.toKey(`${one.id}:lock`), 'another-worker-token', 'PX', 1500);
    admin.disconnect();
    const done = await finished(queue, one.id);
    expect(tries).toHaveLength(2);
    expect(tries[0]!.aborted! - taken).toBeLessThan(1500); // within a renewal period (500 ms) and some
    expect(done.returnvalue).toMatchObject({ reward: 2 }); // the second try's
    expect(completedAttempt(path.join(outputDir, 'attempts', one.id))!.reward).toBe(2);
    expect(running.logs).toContain(
      `${one.id}: this worker lost the job's lock (another worker may hold it now): the try is abandoned`,
    );
    await sleep(400);
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([one.id]);
  });

  it('a worker that cannot reach Redis for a lock period (a network split: no error, no answer) stops its tries; healed, the job is run again and committed once', async () => {
    const db = 9;
    const queue = openQueue(db);
    const outputDir = path.join(work, 'split');
    const one = job('local_factual_update', 8);
    await enqueueAttempts(queueConnection({ queue: redis.url(db) }), [one], { retries: 2, backoffMs: 10 });
    const proxy = await startTcpProxy(redis.port);
    const ends: string[] = [];
    let runs = 0;
    const w = worker(
      db,
      {
        outputDir,
        concurrency: 1,
        lockMs: 1000,
        run: async (j, dir, { signal }) => {
          if (++runs === 1) {
            await ended(signal);
            ends.push((signal.reason as Error).message);
          }
          return complete(j, dir, runs);
        },
      },
      proxy.url(db),
    );
    await until(() => runs === 1); // the try is under way (its job active is not enough: it may be checking its lock)
    proxy.split();
    await until(() => ends.length === 1);
    expect(ends[0]).toBe(UNREACHABLE);
    expect(w.logs.some((l) => /^Redis has not answered for \d+ s: stopping the running tries$/.test(l))).toBe(true);
    proxy.heal();
    const done = await finished(queue, one.id);
    expect(done.returnvalue).toMatchObject({ reward: 2 }); // the second run's: the split's try never committed
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([one.id]);
    expect(w.logs).toContain('Redis answers again');
    await w.stop(0);
    await proxy.close();
  });

  it('reuses a finished folder only when its recorded settings hash is the job’s', async () => {
    const outputDir = path.join(work, 'reuse');
    const [same, other] = [job('local_factual_update', 20), job('local_factual_update', 21)];
    for (const [j, hash] of [
      [same, same.hash],
      [other, 'deadbeef'],
    ] as const) {
      const dir = path.join(outputDir, 'attempts', j.id);
      mkdirSync(dir, { recursive: true });
      complete(j, dir, 0.25);
      writeJsonAtomic(path.join(dir, TRY_RECORD), { id: j.id, hash, host: 'h', pid: 1, started_at: '' });
    }
    const queue = openQueue(5);
    await enqueueAttempts(queueConnection({ queue: redis.url(5) }), [same, other], { retries: 0, backoffMs: 10 });
    const ran: string[] = [];
    worker(5, { outputDir, concurrency: 1, run: async (j, dir) => (ran.push(j.id), complete(j, dir, 0.75)) });
    expect((await finished(queue, same.id)).returnvalue.reward).toBe(0.25);
    expect((await finished(queue, other.id)).returnvalue.reward).toBe(0.75);
    expect(ran).toEqual([other.id]);
  });
});

describe.concurrent('lanes: a worker runs a job at the job’s arithmetic or leaves it', () => {
  it('a bf16 worker runs the bf16 jobs and says why it leaves a float32 one, which a float32 worker then runs; status counts each arithmetic', async () => {
    const db = 13;
    const connection = queueConnection({ queue: redis.url(db) });
    const float32 = attemptSettings(
      { model: 'builtin:noop' },
      { itemsPerKind: 1, target: TARGET, precision: 'float32' },
    );
    const [mine, theirs] = [
      job('local_factual_update', 70),
      attemptJob({ family: 'local_factual_update', seed: 71 }, 'builtin:noop', 0, float32, 'calibration.json'),
    ];
    // The same attempt in another precision is another id: neither reuses the other's folder.
    const same = attemptJob({ family: 'local_factual_update', seed: 70 }, 'builtin:noop', 0, float32, 'c.json');
    expect(same.id).not.toBe(mine.id);
    await enqueueAttempts(connection, [mine, theirs], { retries: 0, backoffMs: 10 });
    const outputDir = path.join(work, 'lanes');
    const ran: Record<string, string[]> = { bf16: [], float32: [] };
    const bf16 = worker(db, {
      outputDir,
      concurrency: 1,
      lockMs: 500,
      run: async (j, dir) => (ran.bf16!.push(j.id), complete(j, dir)),
    });
    const bf16Lane = openQueue(db);
    const float32Lane = openQueue(db, float32.arithmetic);
    expect((await finished(bf16Lane, mine.id)).returnvalue).toMatchObject({ status: 'complete' });
    const why = `jobs of another arithmetic wait (1 of ${float32.arithmetic}), left to workers that compute it: this one computes ${SETTINGS.arithmetic} (its service: --precision bf16, --device cpu)`;
    await until(() => bf16.logs.includes(why));
    expect(await float32Lane.getJobState(theirs.id)).toBe('waiting');
    const status = await queueStatus(connection);
    expect(status.lanes).toEqual([
      {
        lane: laneName(SETTINGS.arithmetic),
        arithmetic: SETTINGS.arithmetic,
        waiting: 0,
        active: 0,
        done: 1,
        failed: 0,
      },
      { lane: laneName(float32.arithmetic), arithmetic: float32.arithmetic, waiting: 1, active: 0, done: 0, failed: 0 },
    ]);
    expect(statusText(status)).toContain(`  ${float32.arithmetic}: 1 waiting, 0 active, 0 done, 0 failed`);
    worker(db, {
      outputDir,
      concurrency: 1,
      precision: 'float32',
      run: async (j, dir) => (ran.float32!.push(j.id), complete(j, dir)),
    });
    expect((await finished(float32Lane, theirs.id)).returnvalue).toMatchObject({ status: 'complete' });
    expect(ran).toEqual({ bf16: [mine.id], float32: [theirs.id] });
    await bf16.stop(0);
  });
});

describe.concurrent('a claim without its folder', () => {
  /** One job on database `db`, and what a worker needs to tell its tries apart: each run's reward is its number. */
  async function oneJob(db: number, seed: number, server = redis) {
    const one = job('local_factual_update', seed);
    await enqueueAttempts(queueConnection({ queue: server.url(db) }), [one], { retries: 3, backoffMs: 10 });
    const outputDir = path.join(work, `claims-${db}`);
    const state = { runs: 0, tokens: [] as string[] };
    const run: WorkerOptions['run'] = async (j, dir) => complete(j, dir, ++state.runs);
    return { one, outputDir, state, run, queue: openQueue(db, SETTINGS.arithmetic, server) };
  }

  /** The attempt's commit claim as Redis holds it. */
  async function claimOf(queue: Queue, id: string): Promise<CommitClaim<AttemptStatus>> {
    const client = (await queue.client) as unknown as Redis;
    return JSON.parse((await client.get(queue.toKey(`${id}:commit`)))!) as CommitClaim<AttemptStatus>;
  }

  /** The attempt ended with one result and its folder: the job's result is the folder's, its claim confirmed. */
  async function oneResult(queue: Queue, outputDir: string, id: string, reward: number) {
    const done = await finished(queue, id);
    expect(done.returnvalue).toMatchObject({ status: 'complete', reward });
    expect(completedAttempt(path.join(outputDir, 'attempts', id))).toEqual(done.returnvalue);
    expect((await claimOf(queue, id)).result).toEqual(done.returnvalue);
    await until(() => readdirSync(path.join(outputDir, 'attempts')).length === 1); // every try folder gone
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([id]);
  }

  it('a claimant cut off past its lock between its claim and its rename: the next try removes its folder, takes the claim over and commits; the claimant then cannot', async () => {
    const db = 10;
    const { one, outputDir, state, run, queue } = await oneJob(db, 60);
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => (resume = resolve));
    let claimed!: () => void;
    const atClaim = new Promise<void>((resolve) => (claimed = resolve));
    const first = worker(db, {
      outputDir,
      concurrency: 1,
      lockMs: 1000,
      run,
      afterClaim: async () => {
        claimed();
        await paused; // cut off here: a paused VM, a stopped process
      },
    });
    await atClaim;
    const cutOff = await claimOf(queue, one.id);
    expect(cutOff).toMatchObject({ committed: false, result: { reward: 1 } });
    const theirs = tryFolder(path.join(outputDir, 'attempts', one.id), cutOff.token);
    expect(existsSync(theirs)).toBe(true);
    // Its lock goes to another (the renewal fails from then on); once that lapses, the job is taken up again.
    await ((await queue.client) as unknown as Redis).set(queue.toKey(`${one.id}:lock`), 'another', 'PX', 1000);
    const second = worker(db, { outputDir, concurrency: 1, lockMs: 1000, run });
    await until(async () => (await queue.getJobState(one.id)) === 'completed');
    expect(existsSync(theirs)).toBe(false);
    expect(second.logs).toContain(
      `${one.id}: took over the commit claim of try ${HOST} pid ${process.pid}: it holds no lock and its folder is not in place`,
    );
    resume(); // the claimant goes on: its rename finds its folder gone
    await oneResult(queue, outputDir, one.id, 2);
    expect(await claimOf(queue, one.id)).toMatchObject({ committed: true });
    expect(state.runs).toBe(2);
    await Promise.all([first.stop(0), second.stop(0)]);
  });

  it('a claim whose reply is lost (a proxy drops it, the worker cut off past its lock): the try gives its claim back and stops; the next try commits once', async () => {
    const db = 11;
    const { one, outputDir, state, run, queue } = await oneJob(db, 61);
    const proxy = await startTcpProxy(redis.port);
    const dropped = proxy.dropReplyTo("-- iwibench: claim an attempt's commit", 2500);
    const first = worker(db, { outputDir, concurrency: 1, lockMs: 1000, run }, proxy.url(db));
    await dropped;
    const second = worker(db, { outputDir, concurrency: 1, lockMs: 1000, run });
    await oneResult(queue, outputDir, one.id, 2);
    expect(state.runs).toBe(2);
    expect(first.logs.some((l) => l.startsWith('Redis has not answered for'))).toBe(true);
    await Promise.all([first.stop(0), second.stop(0)]);
    await proxy.close();
  });

  it('Redis restarted between the claim and the rename, down past the lock: the folder goes into place and is the result, run once', async () => {
    // A Redis of its own: the file's cases run at once, and the others' would see the restart.
    const own = await startRedis();
    const db = 12;
    const { one, outputDir, state, run, queue } = await oneJob(db, 62, own);
    let restarts = 0;
    const w = worker(
      db,
      {
        outputDir,
        concurrency: 1,
        lockMs: 1000,
        run,
        afterClaim: async () => {
          if (restarts++ === 0) await own.restart(2500);
        },
      },
      own.url(db),
    );
    await oneResult(queue, outputDir, one.id, 1);
    expect(state.runs).toBe(1);
    expect(await claimOf(queue, one.id)).toMatchObject({ committed: true });
    await w.stop(0);
    await queue.close();
    await own.stop();
  });
});

describe.concurrent('pilot status', () => {
  it('shows each running job’s worker, start and phase (its transcript’s turn, its evaluation’s items), and a job waiting to retry with its last error', async () => {
    const db = 8;
    const queue = openQueue(db);
    const [running, retrying] = [job('local_factual_update', 50), job('local_factual_update', 51)];
    await enqueueAttempts(queueConnection({ queue: redis.url(db) }), [running, retrying], {
      retries: 1,
      backoffMs: 60_000,
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let tryDir = '';
    const w = worker(db, {
      outputDir: path.join(work, 'status'),
      concurrency: 2,
      run: async (j, dir) => {
        if (j.id === retrying.id) throw new TransientFailure('the service is unreachable');
        tryDir = dir;
        writeFileSync(
          path.join(dir, 'trace.jsonl'),
          ['{"time":"t","type":"request","turn":1}', '{"time":"t","type":"request","turn":2}', ''].join('\n'),
        );
        await released;
        return complete(j, dir);
      },
    });
    let status: Awaited<ReturnType<typeof queueStatus>>;
    for (;;) {
      status = await queueStatus(queueConnection({ queue: redis.url(db) }));
      if (status.jobs.some((j) => j.phase === 'editing turn 2 of 64') && status.jobs.length === 2) break;
      await sleep(200);
    }
    expect(status.jobs).toEqual([
      {
        id: running.id,
        state: 'active',
        tries: 1,
        max_tries: 2,
        worker: { host: expect.stringContaining(os.hostname()), pid: process.pid },
        since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        phase: 'editing turn 2 of 64',
      },
      { id: retrying.id, state: 'retrying', tries: 1, max_tries: 2, last_error: 'the service is unreachable' },
    ]);
    const text = statusText(status);
    expect(text).toContain(`${running.id}: editing turn 2 of 64 on ${os.hostname()}`);
    expect(text).toContain(`${retrying.id}: waiting to retry (try 1/2), last error: the service is unreachable`);
    // Its evaluation's progress, as an evaluation process reports it to its parent (on the bus, by its out file).
    const out = path.join(tryDir, 'outputs-pristine.json');
    evaluationProgress.emit('progress', { phase: 'pristine', done: 3, total: 40, generatedTokens: 9, seconds: 1, out });
    for (;;) {
      status = await queueStatus(queueConnection({ queue: redis.url(db) }));
      if (status.jobs[0]!.phase === 'evaluating pristine 3/40') break;
      await sleep(200);
    }
    release();
    await finished(queue, running.id);
    await w.stop(0);
  });
});

describe.concurrent('clearing tries', () => {
  it('clears a dead try of this host and a try whose job holds no lock; leaves a locked one and another queue’s', async () => {
    const attempts = path.join(work, 'sweep', 'attempts');
    const dead = spawnSync(process.execPath, ['-e', 'process.pid']).pid!; // a pid no longer running
    const folders = {
      ownDead: `unknown-job.partial-${HOST}-${dead}-0000000a`,
      ownLive: `unknown-job.partial-${HOST}-${process.pid}-0000000b`,
      unlocked: 'job-free.partial-machine-b.12345678-1-0000000c',
      locked: 'job-held.partial-machine-b.12345678-1-0000000d',
      otherQueue: 'unknown-job.partial-machine-b.12345678-1-0000000e',
    };
    for (const name of Object.values(folders)) mkdirSync(path.join(attempts, name), { recursive: true });
    // What the worker asks Redis: is the job locked, or not this queue's (worker.ts)?
    const jobs: Record<string, 'locked' | 'free'> = { 'job-free': 'free', 'job-held': 'locked' };
    const cleared = await sweepTries(attempts, async (t) => jobs[t.id] !== 'free');
    expect(cleared.sort()).toEqual([folders.ownDead, folders.unlocked].sort());
    expect(readdirSync(attempts).sort()).toEqual([folders.locked, folders.otherQueue, folders.ownLive].sort());
  });

  it('a worker clears the tries of jobs its queue no longer has (pilot clean removed them), not another queue’s', async () => {
    const db = 14;
    const outputDir = path.join(work, 'cleaned');
    const attempts = path.join(outputDir, 'attempts');
    const client = new Redis({ port: redis.port, host: '127.0.0.1', db });
    const mine = await queueId(client);
    client.disconnect();
    const lane = laneName(SETTINGS.arithmetic);
    const tries = {
      cleaned: { name: `${job('local_factual_update', 80).id}.partial-machine-b.12345678.1-1-0000000a`, queue: mine },
      otherQueue: { name: `${job('local_factual_update', 81).id}.partial-machine-b.12345678.1-1-0000000b`, queue: 'x' },
    };
    for (const { name, queue } of Object.values(tries)) {
      mkdirSync(path.join(attempts, name), { recursive: true });
      const id = name.replace(/\.partial-.*$/, '');
      const record: TryRecord = { id, hash: '0', host: 'machine-b', pid: 1, started_at: '', queue, lane };
      writeJsonAtomic(path.join(attempts, name, TRY_RECORD), record);
    }
    // A try of before lanes and queue ids records neither: its job missing, it may be another queue's.
    mkdirSync(path.join(attempts, 'a-job-of-before-lanes.partial-machine-b.12345678-1-0000000c'));
    const w = worker(db, { outputDir, concurrency: 1, lockMs: 500, run: async (j, dir) => complete(j, dir) });
    await until(() => !existsSync(path.join(attempts, tries.cleaned.name)));
    await sleep(1500); // more than a sweep period (1 s): the others were looked at, and left
    expect(readdirSync(attempts).sort()).toEqual(
      [tries.otherQueue.name, 'a-job-of-before-lanes.partial-machine-b.12345678-1-0000000c'].sort(),
    );
    await w.stop(0);
  });

  it('a dead try’s evaluation process is ended (SIGTERM, then SIGKILL), and a shutdown while it is requeues the job uncounted', async () => {
    const db = 15;
    const queue = openQueue(db);
    const one = job('local_factual_update', 90);
    await enqueueAttempts(queueConnection({ queue: redis.url(db) }), [one], { retries: 0, backoffMs: 10 });
    const outputDir = path.join(work, 'dead-try');
    // A dead try of this host, and the evaluation process it left, which ignores SIGTERM and says when it gets one.
    const dead = spawnSync(process.execPath, ['-e', 'process.pid']).pid!;
    const deadTry = path.join(outputDir, 'attempts', `${one.id}.partial-${HOST}-${dead}-0000000d`);
    mkdirSync(deadTry, { recursive: true });
    const [ready, termed] = [path.join(outputDir, 'ready'), path.join(outputDir, 'termed')];
    const script = `const fs = require('fs'); process.on('SIGTERM', () => fs.writeFileSync(${JSON.stringify(termed)}, ''));
      fs.writeFileSync(${JSON.stringify(ready)}, ''); setInterval(() => {}, 1000);`;
    const orphan = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
    await until(() => existsSync(ready));
    writeJsonAtomic(path.join(deadTry, 'outputs-pristine.json.pid'), processIdentity(orphan.pid!));
    const runs: string[] = [];
    const first = worker(db, { outputDir, concurrency: 1, run: async (j, dir) => (runs.push(dir), complete(j, dir)) });
    await until(() => existsSync(termed)); // the first try is clearing the dead one
    await first.stop(0);
    const requeued = (await queue.getJob(one.id))!;
    expect(await requeued.getState()).toBe('waiting');
    expect([requeued.attemptsMade, requeued.attemptsStarted]).toEqual([0, 0]);
    expect(runs).toEqual([]);
    const second = worker(db, { outputDir, concurrency: 1, run: async (j, dir) => (runs.push(dir), complete(j, dir)) });
    expect((await finished(queue, one.id)).returnvalue).toMatchObject({ status: 'complete' });
    expect(isRunning(processIdentity(orphan.pid!))).toBe(false); // SIGKILLed once SIGTERM did nothing
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([one.id]);
    await second.stop(0);
  });
});

describe.concurrent('durations', () => {
  it('reads 90s, 30m, 6h, 7d and bare seconds; refuses 0 and anything past Node’s timer limit, clearly', () => {
    expect(parseDuration('90s', '--x')).toBe(90_000);
    expect(parseDuration('1.5m', '--x')).toBe(90_000);
    expect(parseDuration('6h', '--x')).toBe(6 * 3_600_000);
    expect(parseDuration('24d', '--x')).toBe(24 * 86_400_000);
    expect(parseDuration('45', '--x')).toBe(45_000);
    expect(() => parseDuration('0', '--attempt-timeout')).toThrow(
      '--attempt-timeout must be more than 0 (at least 1 ms), got "0"',
    );
    expect(() => parseDuration('0s', '--x')).toThrow('must be more than 0');
    expect(() => parseDuration('25d', '--attempt-timeout')).toThrow(
      `--attempt-timeout must be at most 24.8 days, Node's timer limit, got "25d"`,
    );
    expect(parseDuration(`${Math.floor(MAX_TIMER_MS / 1000)}s`, '--x')).toBe(Math.floor(MAX_TIMER_MS / 1000) * 1000);
    expect(() => parseDuration('soon', '--x')).toThrow('--x must be a duration like 90s, 30m, 6h or 7d, got "soon"');
    expect(parseDuration('90d', '--older-than', Infinity)).toBe(90 * 86_400_000); // compared with dates: no limit
  });
});

describe.concurrent("the commit's fencing step", () => {
  it('claims only while holding the lock, once; confirmed, a later claimant gets its result; unconfirmed, a claimant holding the lock may take it over; only its own try gives a claim back', async () => {
    const client = new Redis({ port: redis.port, host: '127.0.0.1', db: 6 });
    try {
      const keys = { lock: 'bull:q:a:lock', commit: 'bull:q:a:commit' };
      const of = (token: string, result: number) => ({ token, host: 'h', pid: 1, result });
      const claim = (token: string, result: number) => claimCommit(client, keys, of(token, result));
      expect(await claim('t1', 1)).toEqual({ kind: 'lost' }); // no lock at all
      await client.set(keys.lock, 't1');
      expect(await claim('t2', 2)).toEqual({ kind: 'lost' }); // another's lock
      expect(await claim('t1', 1)).toEqual({ kind: 'claimed' });
      expect(await claim('t1', 1)).toEqual({ kind: 'claimed' }); // the same call again: still its own
      // t1 lost its lock before confirming: t2, holding it now, finds the claim unconfirmed and may take it over.
      await client.set(keys.lock, 't2');
      const unconfirmed = await claim('t2', 2);
      expect(unconfirmed).toEqual({
        kind: 'unconfirmed',
        claim: { ...of('t1', 1), committed: false },
        raw: JSON.stringify({ ...of('t1', 1), committed: false }),
      });
      const raw = unconfirmed.kind === 'unconfirmed' ? unconfirmed.raw : '';
      expect(await takeOverClaim(client, keys, 'not what is held', of('t2', 2))).toBe('changed');
      expect(await takeOverClaim(client, { ...keys, lock: 'bull:q:other:lock' }, raw, of('t2', 2))).toBe('lost');
      expect(await releaseClaim(client, keys, of('t1', 1))).toBe('ok'); // its own, unconfirmed: given back
      expect(await claim('t2', 2)).toEqual({ kind: 'claimed' });
      expect(await releaseClaim(client, keys, of('t1', 1))).toBe('changed'); // not its own any more
      expect(await confirmClaim(client, keys, of('t1', 1))).toBe('changed');
      expect(await confirmClaim(client, keys, of('t2', 2))).toBe('ok');
      expect(await releaseClaim(client, keys, of('t2', 2))).toBe('changed'); // confirmed: it stands
      await client.set(keys.lock, 't3');
      expect(await claim('t3', 3)).toEqual({ kind: 'taken', claim: { ...of('t2', 2), committed: true } });
      // A claim of before confirmations (no `committed`) stands as well.
      await client.set(keys.commit, JSON.stringify(of('t0', 0)));
      expect(await claim('t3', 3)).toEqual({ kind: 'taken', claim: of('t0', 0) });
      await client.set(keys.commit, raw);
      expect(await takeOverClaim(client, { ...keys, lock: keys.lock }, raw, of('t3', 3))).toBe('ok');
      expect(JSON.parse((await client.get(keys.commit))!)).toEqual({ ...of('t3', 3), committed: false });
    } finally {
      client.disconnect();
    }
  });
});

describe.concurrent('the operator commands', () => {
  it('retry puts failed jobs back, clean removes finished ones, pause and resume act on the queue; status shows them', async () => {
    const db = 7;
    const url = redis.url(db);
    const queue = openQueue(db);
    const [good, bad, flaky] = [
      job('local_factual_update', 30),
      job('local_factual_update', 31),
      job('alias_acquisition', 32),
    ];
    await enqueueAttempts(queueConnection({ queue: url }), [good, bad, flaky], { retries: 0, backoffMs: 10 });
    let healed = false;
    const outputDir = path.join(work, 'operate');
    const w = worker(db, {
      outputDir,
      concurrency: 1,
      run: async (j, dir) => {
        if (j.id === bad.id && !healed) throw new Error('patch refused');
        if (j.id === flaky.id && !healed) throw new TransientFailure('rate limited');
        return complete(j, dir);
      },
    });
    for (const id of [good.id, bad.id, flaky.id]) await finished(queue, id);
    expect((await queueStatus(queueConnection({ queue: url }))).counts).toMatchObject({ done: 1, failed: 2 });

    await pauseQueue(queueConnection({ queue: url }), true);
    expect(await queue.isPaused()).toBe(true);
    expect(statusText(await queueStatus(queueConnection({ queue: url })))).toContain('the queue is PAUSED');
    healed = true;
    // Both kinds of failure: failed for good (transient, tries spent) and completed with a deterministic failure.
    const retried = await cli(['pilot', 'retry', '--queue', url, '--failed', '--json']);
    expect(JSON.parse(retried.stdout)).toEqual({ retried: [flaky.id, bad.id], not_failed: [] });
    await sleep(1000); // paused: nothing is taken
    expect(await queue.getActiveCount()).toBe(0);
    expect((await retryFailed(queueConnection({ queue: url }), [good.id])).notFailed).toEqual([good.id]);
    await pauseQueue(queueConnection({ queue: url }), false);
    for (const id of [bad.id, flaky.id]) expect((await finished(queue, id)).returnvalue.status).toBe('complete');
    await w.stop(0);

    expect(await cleanFinished(queueConnection({ queue: url }), 'done', 3_600_000)).toEqual([]); // none an hour old
    const all = JSON.parse((await cli(['pilot', 'clean', '--queue', url, '--done', '--json'])).stdout);
    expect(all.removed.sort()).toEqual([good.id, bad.id, flaky.id].sort());
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 0, failed: 0 });
    const client = (await queue.client) as unknown as Redis;
    expect(await client.exists(queue.toKey(`${good.id}:commit`))).toBe(0); // gone with its job
  });
});

describe.concurrent('--queue', () => {
  it('reads host, port and database; rediss:// is TLS with its files; the password comes from the variable named', () => {
    expect(queueConnection({ queue: 'redis://10.0.0.5:6380/2' })).toEqual({
      host: '10.0.0.5',
      port: 6380,
      db: 2,
      maxRetriesPerRequest: null,
    });
    const tls = queueConnection(
      { queue: 'rediss://bench@queue.example:6390', 'queue-password-env': 'Q_PASSWORD' },
      { Q_PASSWORD: 's3cret' },
    );
    expect(tls).toEqual({
      host: 'queue.example',
      port: 6390,
      db: 0,
      username: 'bench',
      password: 's3cret',
      tls: { servername: 'queue.example' },
      maxRetriesPerRequest: null,
    });
    expect(() => queueConnection({ queue: 'redis://127.0.0.1:6379/x' })).toThrow("--queue's database must be a number");
    expect(() => queueConnection({ queue: 'redis://h:1/0', 'queue-tls-ca': 'ca.pem' })).toThrow(
      '--queue-tls-ca needs a rediss:// queue URL',
    );
    expect(() => queueConnection({ queue: 'rediss://h:1/0', 'queue-tls-cert': 'c.pem' })).toThrow(
      '--queue-tls-cert and --queue-tls-key go together',
    );
    expect(() => queueConnection({ queue: 'rediss://h:1/0', 'queue-tls-ca': '/no/such/ca.pem' })).toThrow(
      '--queue-tls-ca: cannot read /no/such/ca.pem',
    );
  });

  it('TLS with a CA and client certificates made by openssl, an ACL user and a password, against a real redis-server', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-tls-'));
    const ssl = (...args: string[]) => {
      const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
    };
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=iwibench test CA',
    );
    for (const name of ['server', 'client']) {
      ssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.csr`,
        '-subj',
        '/CN=localhost',
      );
      writeFileSync(path.join(dir, `${name}.ext`), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
      ssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.pem`,
        '-days',
        '2',
        '-extfile',
        `${name}.ext`,
      );
    }
    const secured = await startRedis(({ spare }) => [
      `tls-port ${spare}`,
      `tls-cert-file ${dir}/server.pem`,
      `tls-key-file ${dir}/server.key`,
      `tls-ca-cert-file ${dir}/ca.pem`,
      'tls-auth-clients yes',
      'requirepass default-s3cret',
      'user pilot on >pilot-s3cret ~* &* +@all',
    ]);
    try {
      const files = {
        'queue-tls-ca': `${dir}/ca.pem`,
        'queue-tls-cert': `${dir}/client.pem`,
        'queue-tls-key': `${dir}/client.key`,
      };
      const env = { Q_PASSWORD: 'pilot-s3cret' };
      const url = `rediss://pilot@localhost:${secured.spare}/0`;
      const connection = queueConnection({ queue: url, 'queue-password-env': 'Q_PASSWORD', ...files }, env);
      await checkQueue(connection, url);
      await enqueueAttempts(connection, [job('local_factual_update', 40)], { retries: 0, backoffMs: 10 });
      // `pilot status` with these flags, its password from the environment: parsed and run as its main does.
      const argv = ['--queue', url, '--queue-password-env', 'Q_PASSWORD', '--json'];
      const { flags } = parseCommand(
        [...argv, ...Object.entries(files).flatMap(([k, v]) => [`--${k}`, v])],
        statusCommand,
      );
      process.env.Q_PASSWORD = env.Q_PASSWORD;
      try {
        expect((await onQueue(flags, queueStatus)).counts).toMatchObject({ waiting: 1 });
      } finally {
        delete process.env.Q_PASSWORD;
      }

      const wrong = queueConnection(
        { queue: url, 'queue-password-env': 'Q_PASSWORD', ...files },
        { Q_PASSWORD: 'nope' },
      );
      await expect(checkQueue(wrong, url)).rejects.toThrow(/no Redis answers at .*WRONGPASS/);
      const noClientCert = queueConnection(
        { queue: url, 'queue-password-env': 'Q_PASSWORD', 'queue-tls-ca': files['queue-tls-ca'] },
        env,
      );
      await expect(checkQueue(noClientCert, url)).rejects.toThrow('no Redis answers at');
      const untrusted = queueConnection({ queue: url, 'queue-password-env': 'Q_PASSWORD' }, env);
      await expect(checkQueue(untrusted, url)).rejects.toThrow(/no Redis answers at .*(self-signed|certificate)/);
    } finally {
      await secured.stop();
    }
  });
});

describe.concurrent('failure kinds', () => {
  it('an unreachable service and a transient editor API error are transient; anything else is not', async () => {
    // A port nothing listens on (Redis's, once stopped, would do too; this one was free a moment ago).
    const server = createServer().listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const unreachable = await fetch(`http://127.0.0.1:${port}/health`).catch((e: unknown) => e);
    expect(isTransient(unreachable)).toBe(true);
    expect(isTransient(new Error('patch refused'))).toBe(false);
    expect(isTransient(new TypeError('not a network error'))).toBe(false);
    const ended = (failureKind: EditorRunResult['failureKind']) =>
      ({ stopReason: 'editor_error', failureKind, error: `${failureKind}: …` }) as EditorRunResult;
    for (const kind of ['timeout', 'connection', 'rate_limit', 'server'] as const)
      expect(() => throwIfTransientEditorError(ended(kind))).toThrow(TransientFailure);
    for (const kind of ['auth', 'request', 'api', 'reply'] as const)
      expect(() => throwIfTransientEditorError(ended(kind))).not.toThrow();
  });
});
