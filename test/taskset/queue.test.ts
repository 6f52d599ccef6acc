// The queue of attempts on a real Redis (scripts/redis-server.ts), workers in this process: enqueue twice gives one job
// per attempt, and other settings are refused with the fields named; a malformed job fails at once with its reason;
// a deterministic failure is recorded and not retried, a transient one (a timeout too) is retried a bounded number of
// times and keeps its last error; a try whose lock is taken stops at once and never commits; the commit's fencing
// step; which tries a worker clears; a finished folder is reused only for its own settings; retry, clean, pause and
// resume; a Redis that evicts, or does not answer, is refused within the bound; TLS, an ACL user and a password. Each
// case its own database.
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeJsonAtomic } from '../../core/files.ts';
import { evaluationProgress } from '../../service/evaluation-progress.ts';
import { attemptId, completedAttempt, type AttemptStatus } from '../../taskset/attempt.ts';
import type { EditorRunResult } from '../../taskset/harness/index.ts';
import { checkQueue, QUEUE_NAME, queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { cleanFinished, pauseQueue, retryFailed } from '../../taskset/queue/operate.ts';
import { queueStatus, statusText } from '../../taskset/queue/status.ts';
import { TransientFailure, isTransient, throwIfTransientEditorError } from '../../taskset/queue/failures.ts';
import { claimCommit } from '../../taskset/queue/fence.ts';
import { attemptJob, type AttemptJob } from '../../taskset/queue/job.ts';
import { attemptSettings, settingsHash } from '../../taskset/queue/settings.ts';
import { HOST, sweepTries, TRY_RECORD, type TryRecord } from '../../taskset/queue/tries.ts';
import { startWorker, type AttemptWorker, type JobResult, type WorkerOptions } from '../../taskset/queue/worker.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
type Run = { code: number; stdout: string; stderr: string; ms: number };
const cli = (args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> => {
  const start = performance.now();
  return exec(process.execPath, [CLI, ...args], { cwd: work, env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr, ms: performance.now() - start }),
    (e: { code: number; stdout: string; stderr: string }) => ({ ...e, ms: performance.now() - start }),
  );
};

let redis: RedisHandle;
let work: string;
const queues: Queue[] = [];
const workers: AttemptWorker[] = [];
beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-'));
});
afterAll(async () => {
  for (const w of workers) await w.stop(0);
  for (const q of queues) await q.close();
  await redis?.stop();
});

function openQueue(db: number): Queue {
  const queue = new Queue(QUEUE_NAME, { connection: queueConnection({ queue: redis.url(db) }) });
  queues.push(queue);
  return queue;
}

function worker(db: number, options: Omit<WorkerOptions, 'connection'>): AttemptWorker {
  const w = startWorker({ connection: queueConnection({ queue: redis.url(db) }), ...options });
  workers.push(w);
  return w;
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

describe('pilot enqueue', () => {
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
    const first = await cli([...args, ...more, '--json']);
    expect(first.stderr).toBe('');
    expect(JSON.parse(first.stdout)).toMatchObject({ attempts: 8, added: 8, already_queued: 0 });
    const second = await cli([...args, ...more]);
    expect(second.stdout).toBe(
      `0 of 8 attempts added to ${redis.url(1)}; 8 already queued (left as they are, nothing added for them)\n`,
    );
    const jobs = await openQueue(1).getJobs(['waiting']);
    const readable = ['local_factual_update', 'lexical_inhibition'].flatMap((family) =>
      ['builtin:noop', 'builtin:demo'].flatMap((label) =>
        [0, 1].map((k) => attemptId(family, family === 'local_factual_update' ? 0 : 3, label, k)),
      ),
    );
    expect(jobs.map((j) => j.id!.replace(/-h[0-9a-f]{8}$/, '')).sort()).toEqual(readable.sort());
    for (const j of jobs) expect(j.id).toBe(`${j.id!.replace(/-h[0-9a-f]{8}$/, '')}-h${settingsHash(j.data.settings)}`);

    // Another reasoning effort and other items per kind: refused, the fields named, nothing added.
    const changed = await cli([...args, ...more, '--reasoning-effort', 'high', '--items-per-kind', '2']);
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain('refused: 8 attempt(s) already queued with other settings');
    expect(changed.stderr).toContain('editor.reasoning_effort: (none) → "high"');
    expect(changed.stderr).toContain('items_per_kind: 0 → 2');
    expect((await openQueue(1).getJobCounts('waiting')).waiting).toBe(8);

    const status = await cli(['pilot', 'status', '--queue', redis.url(1), '--json']);
    expect(JSON.parse(status.stdout).counts).toEqual({ waiting: 8, active: 0, done: 0, failed: 0 });
  });

  it('refuses a bad queue URL, a password in it, a Redis that does not answer or may evict, before enqueuing anything', async () => {
    const base = ['pilot', 'enqueue', 'none.json', '--model', 'google/gemma-3-1b-it', '--editor-model', 'builtin:noop'];
    writeFileSync(path.join(work, 'none.json'), JSON.stringify({ episodes: [] }));
    // At once: each is a fresh process, and none of them touches the queue.
    const [http, secret, unset, closed, typo] = await Promise.all([
      cli([...base, '--queue', 'http://127.0.0.1:1/0']),
      cli([...base, '--queue', `redis://:hunter2@127.0.0.1:${redis.port}/0`]),
      cli([...base, '--queue', redis.url(0), '--queue-password-env', 'IWIBENCH_NO_SUCH_VAR']),
      cli([...base, '--queue', 'redis://127.0.0.1:1/0']),
      cli(['pilot', 'enque']),
    ]);
    expect(http.stderr).toContain('--queue must start with redis:// or rediss:// (TLS)');
    expect(secret.stderr).toContain('name it with --queue-password-env');
    expect(unset.stderr).toContain('$IWIBENCH_NO_SUCH_VAR is not set');
    expect(closed.stderr).toContain('no Redis answers at redis://127.0.0.1:1/0');
    for (const r of [http, secret, unset, closed]) expect(r.code).toBe(1);
    expect(typo.stderr).toContain('did you mean enqueue?');

    const admin = new Redis({ port: redis.port, host: '127.0.0.1' });
    try {
      await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const evicting = await cli([...base, '--queue', redis.url(0)]);
      expect(evicting.code).toBe(1);
      expect(evicting.stderr).toContain('has maxmemory-policy allkeys-lru');
      expect(evicting.stderr).toContain('set "maxmemory-policy noeviction" in its config file');
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      admin.disconnect();
    }
    expect((await openQueue(0).getJobCounts()).waiting).toBe(0);
  });

  it('enqueue, status and the operator commands give up within their bound, with one line, when Redis stops answering', async () => {
    const frozen = await startRedis();
    try {
      const url = frozen.url(0);
      process.kill(frozen.pid(), 'SIGSTOP'); // connections are accepted, nothing is answered
      const bound = ['--queue', url, '--queue-timeout-seconds', '2'];
      const enqueue = ['pilot', 'enqueue', 'none.json', '--model', 'google/gemma-3-1b-it', '--editor-model', 'x'];
      // The same commands against a Redis that answers, at the same time: what starting a process costs here.
      const [live, ...runs] = await Promise.all([
        cli(['pilot', 'status', '--queue', redis.url(0)]),
        cli(['pilot', 'status', ...bound]),
        cli([...enqueue, ...bound]),
        cli(['pilot', 'pause', ...bound]),
      ]);
      expect(live!.code).toBe(0);
      for (const r of runs) {
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`no Redis answers at ${url}`);
        expect(r.stderr).toContain('did not answer within 2 s');
        expect(r.stderr.trim().split('\n')).toHaveLength(1);
        expect(r.ms).toBeLessThan(live!.ms + 2 * 2000 + 3000); // the bound (connect, then a command), and some
      }
    } finally {
      process.kill(frozen.pid(), 'SIGCONT');
      await frozen.stop();
    }
  });
});

describe('a worker', () => {
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
      'malformed job (not iwibench-attempt-job/2): / must NOT have additional properties; /seed must be >= 0',
    );
    expect(bad.attemptsMade).toBe(1); // not retried
    const wrong = await finished(queue, 'wrong-id');
    expect(wrong.failedReason).toBe(`malformed job: its id "something-else" is not its attempt's id "${good.id}"`);
    const hash = settingsHash(forged.settings);
    expect((await finished(queue, 'forged')).failedReason).toBe(
      `malformed job: its hash ${good.hash} is not its settings' ${hash}`,
    );
    expect(runs).toEqual([]);
    const status = await cli(['pilot', 'status', '--queue', redis.url(2)]);
    expect(status.stdout).toContain('bad: malformed job');
    expect(status.stdout).toMatch(/\[#+\] 3\/3 finished: 0 done, 3 failed/);
  });

  it('records a deterministic failure, retries a transient one and a timeout a bounded number of times, and writes a whole folder', async () => {
    const connection = queueConnection({ queue: redis.url(3) });
    const queue = openQueue(3);
    const outputDir = path.join(work, 'kinds');
    const [ok, refused, flaky, hung] = [
      job('local_factual_update', 0),
      job('local_factual_update', 1),
      job('alias_acquisition', 2),
      job('alias_acquisition', 3),
    ];
    await enqueueAttempts(connection, [ok, refused, flaky, hung], { retries: 2, backoffMs: 10 });
    const calls: Record<string, number> = {};
    worker(3, {
      outputDir,
      concurrency: 2,
      attemptTimeoutMs: 300,
      run: async (j, dir, { signal }) => {
        calls[j.id] = (calls[j.id] ?? 0) + 1;
        writeFileSync(path.join(dir, 'trace.jsonl'), '{}\n');
        if (j.id === refused.id) throw new Error('patch refused: 0 parameters changed');
        if (j.id === flaky.id) throw new TransientFailure(`the editor API failed (try ${calls[j.id]})`);
        if (j.id === hung.id) await new Promise((resolve) => signal.addEventListener('abort', resolve));
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

    // Only the completed attempt has a folder; the failed tries' folders are gone.
    await sleep(100);
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([ok.id]);
    const status = JSON.parse((await cli(['pilot', 'status', '--queue', redis.url(3), '--json'])).stdout);
    expect(status.counts).toEqual({ waiting: 0, active: 0, done: 1, failed: 3 });
    expect(status.failures.map((f: { id: string }) => f.id)).toEqual([refused.id, flaky.id, hung.id].sort());
  });

  it('a try whose lock is taken stops at once and never commits; the job is run again and committed once', async () => {
    const queue = openQueue(4);
    const outputDir = path.join(work, 'lock-lost');
    const one = job('local_factual_update', 7);
    await enqueueAttempts(queueConnection({ queue: redis.url(4) }), [one], { retries: 0, backoffMs: 10 });
    const tries: { aborted?: number; started: number }[] = [];
    worker(4, {
      outputDir,
      concurrency: 1,
      lockMs: 1000,
      run: async (j, dir, { signal }) => {
        const t = { started: performance.now() } as (typeof tries)[number];
        tries.push(t);
        if (tries.length === 1) {
          await new Promise((resolve) => signal.addEventListener('abort', resolve));
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
    await sleep(400);
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([one.id]);
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

describe('pilot status', () => {
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

describe('clearing tries', () => {
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
    const cleared = await sweepTries(attempts, async (id) => jobs[id] !== 'free');
    expect(cleared.sort()).toEqual([folders.ownDead, folders.unlocked].sort());
    expect(readdirSync(attempts).sort()).toEqual([folders.locked, folders.otherQueue, folders.ownLive].sort());
  });
});

describe("the commit's fencing step", () => {
  it('claims only while holding the lock, once: a second claimant gets the first one’s result', async () => {
    const client = new Redis({ port: redis.port, host: '127.0.0.1', db: 6 });
    try {
      const keys = { lock: 'bull:q:a:lock', commit: 'bull:q:a:commit' };
      const claim = (token: string, result: number) => claimCommit(client, keys, { token, host: 'h', pid: 1, result });
      expect(await claim('t1', 1)).toEqual({ kind: 'lost' }); // no lock at all
      await client.set(keys.lock, 't1');
      expect(await claim('t2', 2)).toEqual({ kind: 'lost' }); // another's lock
      expect(await claim('t1', 1)).toEqual({ kind: 'claimed' });
      expect(await claim('t1', 1)).toEqual({ kind: 'claimed' }); // the same call again: still its own
      await client.set(keys.lock, 't2');
      expect(await claim('t2', 2)).toEqual({ kind: 'taken', claim: { token: 't1', host: 'h', pid: 1, result: 1 } });
    } finally {
      client.disconnect();
    }
  });
});

describe('the operator commands', () => {
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

    expect((await cli(['pilot', 'pause', '--queue', url])).stdout).toBe(`${url}: paused\n`);
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

describe('--queue', () => {
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
      const status = await cli(
        [
          'pilot',
          'status',
          '--queue',
          url,
          '--queue-password-env',
          'Q_PASSWORD',
          '--json',
          ...Object.entries(files).flatMap(([k, v]) => [`--${k}`, v]),
        ],
        { ...process.env, ...env },
      );
      expect(JSON.parse(status.stdout).counts).toMatchObject({ waiting: 1 });

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

describe('failure kinds', () => {
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
