// Queue workers as processes (queue-worker-child.ts: the worker of `pilot worker` with a stand-in attempt) on a real
// Redis, where BullMQ's at-least-once delivery bites: a worker paused past its lock while another takes its job; a
// worker stopped with SIGTERM mid-attempt; two workers in separate PID namespaces and UTS namespaces (two machines)
// sharing one output folder. Executions are counted (each try's start), and each attempt's transcript must end in
// exactly one folder, whole.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { QUEUE_NAME, queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { attemptJob } from '../../taskset/queue/job.ts';
import { attemptSettings } from '../../taskset/queue/settings.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';

vi.setConfig({ testTimeout: 120_000 });
const CHILD = path.join(import.meta.dirname, 'queue-worker-child.ts');
const LOCK_MS = 1500;

let redis: RedisHandle;
let work: string;
const children: ChildProcess[] = [];
const queues: Queue[] = [];
beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-lock-'));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const q of queues) await q.close();
  await redis?.stop();
});

type Child = {
  child: ChildProcess;
  exited: Promise<number | null>;
  output: () => string;
  /** Signal the worker itself (under unshare: the namespace's first process, the worker, seen from here). */
  kill: (signal: NodeJS.Signals) => void;
};

/** A worker process on database `db`, writing `out`, steered through `control`; on host `host` (its own namespaces). */
function startChild(db: number, out: string, control: string, options: { host?: string; graceMs?: number } = {}) {
  const args = [redis.url(db), out, control, String(LOCK_MS), String(options.graceMs ?? 500)];
  const node = [process.execPath, '--import', 'tsx', CHILD, ...args];
  const child = options.host
    ? spawn(
        'unshare',
        [
          '--pid',
          '--fork',
          '--uts',
          '--mount-proc',
          '--kill-child=SIGKILL',
          'sh',
          '-c',
          `hostname ${options.host} && exec "$@"`,
          'sh',
          ...node,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      )
    : spawn(node[0]!, node.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const inner = () =>
    Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]);
  const kill = (signal: NodeJS.Signals) => process.kill(options.host ? inner() : child.pid!, signal);
  return { child, exited, output: () => output, kill } satisfies Child;
}

function openQueue(db: number): Queue {
  const queue = new Queue(QUEUE_NAME, { connection: queueConnection({ queue: redis.url(db) }) });
  queues.push(queue);
  return queue;
}

const SETTINGS = attemptSettings(
  { model: 'builtin:noop' },
  { itemsPerKind: 1, target: { model: 'toy', revision: 'r' } },
);
async function enqueue(db: number, seeds: number[]) {
  const jobs = seeds.map((seed) => attemptJob({ family: 'local_factual_update', seed }, 'noop', 0, SETTINGS, 'c.json'));
  await enqueueAttempts(queueConnection({ queue: redis.url(db) }), jobs, { retries: 2, backoffMs: 100 });
  return jobs.map((j) => j.id);
}

function folders(control: string) {
  return { out: path.join(control, 'out'), control };
}

/** Each try's start: [job id, try folder]. */
const executions = (control: string) =>
  existsSync(path.join(control, 'executions.log'))
    ? readFileSync(path.join(control, 'executions.log'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' ') as [string, string])
    : [];

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

/** The try folders of the output folder, and the attempts committed. */
function listing(out: string) {
  const names = existsSync(path.join(out, 'attempts')) ? readdirSync(path.join(out, 'attempts')).sort() : [];
  return {
    tries: names.filter((n) => n.includes('.partial-')),
    attempts: names.filter((n) => !n.includes('.partial-')),
  };
}

/** A committed attempt is one try's, whole: its transcript and editor.json name the same try, and it completed. */
function wholeFrom(out: string, id: string): string {
  const dir = path.join(out, 'attempts', id);
  const lines = readFileSync(path.join(dir, 'trace.jsonl'), 'utf8').trim().split('\n');
  const writers = new Set(lines.map((l) => (JSON.parse(l) as { try: string }).try));
  expect(writers.size).toBe(1);
  const [writer] = writers;
  expect(JSON.parse(readFileSync(path.join(dir, 'editor.json'), 'utf8'))).toEqual({ try: writer });
  expect(JSON.parse(readFileSync(path.join(dir, 'attempt.json'), 'utf8'))).toMatchObject({ status: 'complete', id });
  return writer!;
}

describe('workers losing their jobs', () => {
  it('a worker paused past its lock (SIGSTOP) while another takes its job: one folder, the new holder’s, whole', async () => {
    const { out, control } = folders(mkdtempSync(path.join(work, 'stopped-')));
    const queue = openQueue(1);
    const [id] = await enqueue(1, [0]);
    const first = startChild(1, out, control);
    await until('the first try', () => executions(control).length === 1 && listing(out).tries.length === 1);
    first.kill('SIGSTOP');
    const second = startChild(1, out, control);
    await until('another worker to take the job over', () => executions(control).length === 2, 30_000);
    writeFileSync(path.join(control, 'release'), '');
    await until('the job to complete', async () => (await queue.getJobState(id!)) === 'completed');
    first.kill('SIGCONT'); // it finds its lock gone: its try stops and its folder goes
    await until('the first try to discard its folder', () => listing(out).tries.length === 0, 15_000);
    const [firstTry, secondTry] = executions(control).map(([, name]) => name);
    expect(executions(control).map(([job]) => job)).toEqual([id, id]); // two executions, one committed
    expect(listing(out)).toEqual({ tries: [], attempts: [id] });
    expect(wholeFrom(out, id!)).toBe(secondTry);
    expect(firstTry).not.toBe(secondTry);
    const job = (await queue.getJob(id!))!;
    expect(job.stalledCounter).toBe(1); // taken over once, which attemptsMade does not show
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 1, failed: 0 });
    for (const w of [first, second]) w.kill('SIGTERM');
    expect(await Promise.all([first.exited, second.exited])).toEqual([0, 0]);
  });

  it('SIGTERM mid-attempt: the job goes back to waiting, uncounted, another worker completes it; a second signal exits at once', async () => {
    const { out, control } = folders(mkdtempSync(path.join(work, 'term-')));
    const queue = openQueue(2);
    const [id, other] = await enqueue(2, [1, 2]);
    const first = startChild(2, out, control, { graceMs: 300 });
    await until('the first try', () => executions(control).length === 1);
    first.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('stopped');
    const [started] = executions(control)[0]!;
    const job = (await queue.getJob(started))!;
    expect(await job.getState()).toBe('waiting');
    expect(job.attemptsMade).toBe(0);
    expect(job.attemptsStarted).toBe(0);
    expect(await queue.getJobCounts('active', 'failed')).toEqual({ active: 0, failed: 0 });
    expect(listing(out).tries).toEqual([]);

    writeFileSync(path.join(control, 'release'), '');
    const second = startChild(2, out, control);
    await until('both jobs to complete', async () => (await queue.getCompletedCount()) === 2);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 2, failed: 0 });
    expect(listing(out)).toEqual({ tries: [], attempts: [id!, other!].sort() });
    expect((await queue.getJob(started))!.attemptsMade).toBe(1);

    // A second signal while the grace period runs: out at once.
    const patient = mkdtempSync(path.join(work, 'term-twice-'));
    await enqueue(3, [3]);
    const third = startChild(3, path.join(patient, 'out'), patient, { graceMs: 60_000 });
    await until('its try', () => executions(patient).length === 1);
    third.kill('SIGTERM');
    await sleep(300);
    const sent = performance.now();
    third.kill('SIGTERM');
    expect(await third.exited).toBe(1);
    expect(performance.now() - sent).toBeLessThan(5000);
    expect(third.output()).toContain('SIGTERM again, exiting at once');
    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('two workers on two "machines" (PID and UTS namespaces) share one output folder: a dead try is cleared, a live one is not', async () => {
    const { out, control } = folders(mkdtempSync(path.join(work, 'hosts-')));
    const queue = openQueue(4);
    const [first, second] = await enqueue(4, [4, 5]);
    const a = startChild(4, out, control, { host: 'machine-a' });
    await until('machine-a to take a job', () => listing(out).tries.length === 1);
    const b = startChild(4, out, control, { host: 'machine-b' });
    await until('machine-b to take the other', () => listing(out).tries.length === 2);
    const hostOf = (name: string) => /\.partial-(machine-[ab])\./.exec(name)?.[1];
    const onA = listing(out).tries.find((n) => hostOf(n) === 'machine-a')!;
    const onB = listing(out).tries.find((n) => hostOf(n) === 'machine-b')!;
    // Both are pid 1 in their namespaces: a pid says nothing across machines.
    expect(onA).toMatch(/-1-[0-9a-f]{8}$/);
    expect(onB).toMatch(/-1-[0-9a-f]{8}$/);
    await sleep(7000); // more than a sweep period of machine-b's worker (5 s): machine-a's live try stays
    expect(listing(out).tries).toEqual([onA, onB].sort());

    a.kill('SIGKILL'); // machine-a dies: its try's job is unlocked once its lock lapses
    await until("machine-a's dead try to be cleared by machine-b", () => !listing(out).tries.includes(onA), 30_000);
    expect(listing(out).tries).toEqual([onB]); // machine-b's own, live
    writeFileSync(path.join(control, 'release'), '');
    await until('both jobs to complete', async () => (await queue.getCompletedCount()) === 2);
    expect(listing(out)).toEqual({ tries: [], attempts: [first!, second!].sort() });
    for (const id of [first!, second!]) expect(hostOf(wholeFrom(out, id))).toBe('machine-b');
    b.kill('SIGTERM');
    expect(await b.exited).toBe(0);
  });
});
