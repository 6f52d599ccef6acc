// The queue of attempts on a real Redis (scripts/redis-server.ts): enqueue twice gives one job per attempt; a malformed job
// fails at once with its reason; a deterministic failure is recorded and not retried, a transient one is retried a
// bounded number of times and keeps its last error; a finished attempt's folder is whole. Each case its own database.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Queue, type Job, type Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeJsonAtomic } from '../../core/files.ts';
import { attemptId, completedAttempt, type AttemptStatus } from '../../taskset/attempt.ts';
import { QUEUE_NAME, queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { TransientFailure, isTransient, throwIfTransientEditorError } from '../../taskset/queue/failures.ts';
import type { EditorRunResult } from '../../taskset/harness/index.ts';
import { attemptJob, type AttemptJob } from '../../taskset/queue/job.ts';
import { startWorker, type JobResult } from '../../taskset/queue/worker.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
const cli = (args: string[]) =>
  exec(process.execPath, [CLI, ...args], { cwd: work }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );

let redis: RedisHandle;
let work: string;
const queues: Queue[] = [];
const workers: Worker[] = [];
beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-'));
});
afterAll(async () => {
  for (const w of workers) await w.close();
  for (const q of queues) await q.close();
  await redis?.stop();
});

function openQueue(db: number): Queue {
  const queue = new Queue(QUEUE_NAME, { connection: queueConnection({ queue: redis.url(db) }) });
  queues.push(queue);
  return queue;
}

/** The job once it has finished (completed or failed for good). */
async function finished(queue: Queue, id: string): Promise<Job> {
  for (;;) {
    const state = await queue.getJobState(id);
    if (state === 'completed' || state === 'failed') return (await queue.getJob(id))!; // read after it finished
    await sleep(50);
  }
}

const EDITOR = { model: 'builtin:noop', label: 'builtin:noop' };
const job = (family: AttemptJob['family'], seed: number, repeat = 0) =>
  attemptJob({ family, seed }, EDITOR, repeat, { calibration: 'calibration.json', itemsPerKind: 1 });

describe('pilot enqueue', () => {
  it('adds one job per (episode, editor, repeat), its id the attempt id; enqueuing again adds nothing and says so', async () => {
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
    const args = ['pilot', 'enqueue', calibration, '--queue', redis.url(1), '--editor-model', 'builtin:noop'];
    const more = ['--editor-model', 'builtin:demo', '--repeats', '2'];
    const first = await cli([...args, ...more]);
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ attempts: 8, added: 8, already_queued: 0 });
    const second = await cli([...args, ...more]);
    expect(JSON.parse(second.stdout)).toMatchObject({ attempts: 8, added: 0, already_queued: 8 });
    expect(second.stderr).toContain('8 of 8 attempts already queued');
    const ids = (await openQueue(1).getJobs(['waiting'])).map((j) => j.id).sort();
    const expected = ['local_factual_update', 'lexical_inhibition'].flatMap((family) =>
      ['builtin:noop', 'builtin:demo'].flatMap((label) =>
        [0, 1].map((k) => attemptId(family, family === 'local_factual_update' ? 0 : 3, label, k)),
      ),
    );
    expect(ids).toEqual(expected.sort());

    const status = await cli(['pilot', 'status', '--queue', redis.url(1), '--json']);
    expect(JSON.parse(status.stdout).counts).toEqual({ waiting: 8, active: 0, done: 0, failed: 0 });
  });

  it('refuses a bad queue URL, a password in it, and a Redis that does not answer, before enqueuing anything', async () => {
    const base = ['pilot', 'enqueue', 'none.json', '--editor-model', 'builtin:noop'];
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
    expect((await openQueue(0).getJobCounts()).waiting).toBe(0);
  });
});

describe('a worker', () => {
  it('fails a malformed job at once with a clear reason, without running anything', async () => {
    const queue = openQueue(2);
    const good = job('local_factual_update', 0);
    await queue.add('bad', { ...good, seed: -1, api_key: 'sk-never' }, { jobId: 'bad', attempts: 3 });
    await queue.add('wrong-id', { ...good, id: 'something-else' }, { jobId: 'wrong-id', attempts: 3 });
    const runs: string[] = [];
    workers.push(
      startWorker({
        connection: queueConnection({ queue: redis.url(2) }),
        outputDir: path.join(work, 'malformed'),
        concurrency: 1,
        run: async (j) => (runs.push(j.id), Promise.reject(new Error('never'))),
      }),
    );
    const bad = await finished(queue, 'bad');
    expect(bad.failedReason).toBe(
      'malformed job (not iwibench-attempt-job/1): / must NOT have additional properties; /seed must be >= 0',
    );
    expect(bad.attemptsMade).toBe(1); // not retried
    const wrong = await finished(queue, 'wrong-id');
    expect(wrong.failedReason).toBe(`malformed job: its id "something-else" is not its attempt's id "${good.id}"`);
    expect(runs).toEqual([]);
    const status = await cli(['pilot', 'status', '--queue', redis.url(2)]);
    expect(status.stdout).toContain('bad: malformed job');
    expect(status.stdout).toMatch(/\[#+\] 2\/2 finished: 0 done, 2 failed/);
  });

  it('records a deterministic failure, retries a transient one a bounded number of times, and writes a whole folder', async () => {
    const connection = queueConnection({ queue: redis.url(3) });
    const queue = openQueue(3);
    const outputDir = path.join(work, 'kinds');
    const [ok, refused, flaky] = [
      job('local_factual_update', 0),
      job('local_factual_update', 1),
      job('alias_acquisition', 2),
    ];
    await enqueueAttempts(connection, [ok, refused, flaky], { retries: 2, backoffMs: 10 });
    const calls: Record<string, number> = {};
    workers.push(
      startWorker({
        connection,
        outputDir,
        concurrency: 2,
        run: async (j, dir) => {
          calls[j.id] = (calls[j.id] ?? 0) + 1;
          writeFileSync(path.join(dir, 'trace.jsonl'), '{}\n');
          if (j.id === refused.id) throw new Error('patch refused: 0 parameters changed');
          if (j.id === flaky.id) throw new TransientFailure(`the editor API failed (try ${calls[j.id]})`);
          const status: AttemptStatus = {
            status: 'complete',
            id: j.id,
            family: j.family,
            seed: j.seed,
            editor: j.editor.label,
            reward: 0.5,
            stop_reason: 'final_reply',
            finished_at: new Date(0).toISOString(),
          };
          writeJsonAtomic(path.join(dir, 'attempt.json'), status);
          return status;
        },
      }),
    );
    const done = await finished(queue, ok.id);
    expect(done.returnvalue).toMatchObject({ status: 'complete', id: ok.id, reward: 0.5 });
    expect(completedAttempt(path.join(outputDir, 'attempts', ok.id))).toEqual(done.returnvalue);

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

    // Only the completed attempt has a folder; the failed tries' temp folders are gone.
    expect(readdirSync(path.join(outputDir, 'attempts'))).toEqual([ok.id]);
    expect(existsSync(path.join(outputDir, 'attempts', ok.id, 'trace.jsonl'))).toBe(true);
    const status = JSON.parse((await cli(['pilot', 'status', '--queue', redis.url(3), '--json'])).stdout);
    expect(status.counts).toEqual({ waiting: 0, active: 0, done: 1, failed: 2 });
    expect(status.failures).toEqual(
      [
        { id: refused.id, reason: 'patch refused: 0 parameters changed' },
        { id: flaky.id, reason: 'the editor API failed (try 3)' },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
  });
});

describe('--queue', () => {
  it('reads host, port and database; rediss:// is TLS; the password comes from the variable named', () => {
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
