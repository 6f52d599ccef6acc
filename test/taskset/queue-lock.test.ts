// Queue workers as processes (queue-worker-child.ts: the worker of `pilot worker` with a stand-in attempt) on a real
// Redis, where BullMQ's at-least-once delivery bites (the worker that completes what such a process leaves runs in this
// process, where that one is not the case's subject): a worker paused past its lock while another takes its job; a
// worker killed (SIGKILL) between its commit claim and its rename, whose claim the next try takes over; a worker
// stopped with SIGTERM mid-attempt, with Redis answering and with Redis unreachable (a network split, through a proxy);
// two workers in separate PID namespaces and UTS namespaces (two machines) sharing one output folder; two in separate
// PID namespaces with one hostname (two containers). Executions are counted (each try's start), and each attempt's
// transcript must end in exactly one folder, whole. The namespaces need root (`unshare`): those cases say so and are
// skipped where the tests do not run as root.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { attemptJob } from '../../taskset/queue/job.ts';
import type { Redis } from 'ioredis';
import type { CommitClaim } from '../../taskset/queue/fence.ts';
import { laneName } from '../../taskset/queue/lanes.ts';
import { attemptSettings } from '../../taskset/queue/settings.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';
import { startWorker, type AttemptWorker } from '../../taskset/queue/worker.ts';
import { standInAttempt } from './stand-in-attempt.ts';
import { startTcpProxy } from './tcp-proxy.ts';

vi.setConfig({ testTimeout: 120_000 });
/** `unshare` (PID and UTS namespaces) needs root. */
const ROOT = process.getuid?.() === 0;
const CHILD = path.join(import.meta.dirname, 'queue-worker-child.ts');
const LOCK_MS = 1500;

let redis: RedisHandle;
let work: string;
const children: ChildProcess[] = [];
const workers: AttemptWorker[] = [];
const queues: Queue[] = [];
beforeAll(async () => {
  redis = await startRedis();
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-lock-'));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const w of workers) await w.stop(0);
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

type ChildOptions = {
  /** Its own PID and UTS namespaces, with this hostname (another machine). */
  host?: string;
  /** Its own PID namespace only (a container beside another, one hostname), the worker this pid in it. */
  container?: 1 | 2;
  graceMs?: number;
  /** The Redis URL, if not the test's own (a proxy's). */
  url?: string;
  /** queue-worker-child.ts's test hook between its commit claim and its rename. */
  afterClaim?: 'kill';
};

/** A worker process on database `db`, writing `out`, steered through `control`. */
function startChild(db: number, out: string, control: string, options: ChildOptions = {}) {
  const args = [options.url ?? redis.url(db), out, control, String(LOCK_MS), String(options.graceMs ?? 500)];
  const node = [
    process.execPath,
    '--import',
    'tsx',
    CHILD,
    ...args,
    ...(options.afterClaim ? [options.afterClaim] : []),
  ];
  const unshare = ['--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL'];
  const child = options.host
    ? spawn('unshare', [...unshare, '--uts', 'sh', '-c', `hostname ${options.host} && exec "$@"`, 'sh', ...node], {
        stdio: ['ignore', 'pipe', 'pipe'],
      })
    : options.container
      ? // pid 2: sh stays the namespace's first process; pid 1: the worker replaces it.
        spawn(
          'unshare',
          [...unshare, 'sh', '-c', options.container === 2 ? '"$@"; exit $?' : 'exec "$@"', 'sh', ...node],
          {
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        )
      : spawn(node[0]!, node.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d));
  child.stderr!.on('data', (d: Buffer) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Under unshare: its child (the namespace's first process), then, for a container, that one's child.
  const childOf = (pid: number) =>
    Number(readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0]);
  const worker = () =>
    options.host || options.container === 1
      ? childOf(child.pid!)
      : options.container === 2
        ? childOf(childOf(child.pid!))
        : child.pid!;
  const kill = (signal: NodeJS.Signals) => process.kill(worker(), signal);
  return { child, exited, output: () => output, kill } satisfies Child;
}

/**
 * Two workers' live tries kept through each other's sweeps: neither cleared the other's (a worker logs each try folder
 * it clears), and both are still there. Unless a machine loaded enough to make a worker miss its own lock's renewal
 * had it abandon its try (it logs that too): its job then runs again, as designed, and there is nothing to check.
 */
function expectLiveTriesKept(check: typeof expect, workers: Child[], tries: string[], out: string) {
  const said = workers.map((w) => w.output()).join('\n');
  if (said.includes("lost the job's lock")) return;
  check(said).not.toContain('cleared the try folder');
  check(listing(out).tries).toEqual([...tries].sort());
}

/**
 * A worker in this process (the stand-in attempt, the same lock), for a case whose subject is another worker's process:
 * it completes what that one leaves.
 */
function inProcess(db: number, out: string, control: string): AttemptWorker & { logs: string[] } {
  const logs: string[] = [];
  const running = startWorker({
    connection: queueConnection({ queue: redis.url(db) }),
    outputDir: out,
    concurrency: 1,
    lockMs: LOCK_MS,
    run: standInAttempt(control),
    log: (line) => logs.push(line),
  });
  workers.push(running);
  return { ...running, logs };
}

function openQueue(db: number): Queue {
  const queue = new Queue(laneName(SETTINGS.arithmetic), { connection: queueConnection({ queue: redis.url(db) }) });
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

// The cases are independent (a database, a folder and processes each) and mostly wait (locks lapsing, sweeps, grace
// periods): they run at once.
describe.concurrent('workers losing their jobs', () => {
  it('a worker paused past its lock (SIGSTOP) while another takes its job: one folder, the new holder’s, whole', async ({
    expect,
  }) => {
    const { out, control } = folders(mkdtempSync(path.join(work, 'stopped-')));
    const queue = openQueue(1);
    const [id] = await enqueue(1, [0]);
    const first = startChild(1, out, control);
    await until('the first try', () => executions(control).length === 1 && listing(out).tries.length === 1);
    first.kill('SIGSTOP');
    const second = inProcess(1, out, control);
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
    first.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    await second.stop(0);
  });

  it('SIGTERM mid-attempt: the job goes back to waiting, uncounted, another worker completes it; a second signal exits at once', async ({
    expect,
  }) => {
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
    const second = startChild(2, out, control, { graceMs: 60_000 });
    await until('both jobs to complete', async () => (await queue.getCompletedCount()) === 2);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 2, failed: 0 });
    expect(listing(out)).toEqual({ tries: [], attempts: [id!, other!].sort() });
    expect((await queue.getJob(started))!.attemptsMade).toBe(1);

    // A second signal while the grace period (a minute) runs: out at once, the try left as it is.
    rmSync(path.join(control, 'release'));
    await enqueue(2, [3]);
    await until('its try', () => executions(control).length === 4);
    second.kill('SIGTERM');
    await sleep(300);
    second.kill('SIGTERM');
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain('SIGTERM again, exiting at once');
  });

  it.skipIf(!ROOT)(
    'two workers on two "machines" (PID and UTS namespaces: root only, skipped otherwise) share one output folder: a dead try is cleared, a live one is not',
    async ({ expect }) => {
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
      await sleep(3500); // more than two sweep periods of machine-b's worker (1.5 s): machine-a's live try stays
      expectLiveTriesKept(expect, [a, b], [onA, onB], out);

      a.kill('SIGKILL'); // machine-a dies: its try's job is unlocked once its lock lapses
      await until("machine-a's dead try to be cleared by machine-b", () => !listing(out).tries.includes(onA), 30_000);
      // By machine-b's sweep, which logs the folders it cleared once it has removed them (the line may follow the
      // removal through the pipe).
      await until("machine-b to say it cleared machine-a's try", () =>
        b.output().includes(`cleared the try folder ${onA}`),
      );
      // What is left is machine-b's, and not nothing: its own live try. (On a machine loaded enough to make it miss
      // its lock's renewal, machine-b abandons that try, whose folder goes once the stand-in stops, and its free slot
      // may take machine-a's job: another try of machine-b's then stands beside or instead of it.)
      const left = listing(out).tries;
      expect(left.length).toBeGreaterThan(0);
      expect(left.every((name) => hostOf(name) === 'machine-b')).toBe(true);
      writeFileSync(path.join(control, 'release'), '');
      await until('both jobs to complete', async () => (await queue.getCompletedCount()) === 2);
      expect(listing(out)).toEqual({ tries: [], attempts: [first!, second!].sort() });
      for (const id of [first!, second!]) expect(hostOf(wholeFrom(out, id))).toBe('machine-b');
      b.kill('SIGTERM');
      expect(await b.exited).toBe(0);
    },
  );

  it('a worker killed (SIGKILL) between its commit claim and its rename: the next try takes the claim over and commits, once', async ({
    expect,
  }) => {
    const { out, control } = folders(mkdtempSync(path.join(work, 'killed-at-claim-')));
    const queue = openQueue(5);
    const [id] = await enqueue(5, [6]);
    writeFileSync(path.join(control, 'release'), ''); // each try finishes at once
    const first = startChild(5, out, control, { afterClaim: 'kill' });
    await first.exited;
    expect(first.child.signalCode).toBe('SIGKILL');
    const client = (await queue.client) as unknown as Redis;
    const claim = async () => JSON.parse((await client.get(queue.toKey(`${id}:commit`)))!) as CommitClaim<unknown>;
    expect(await claim()).toMatchObject({ committed: false }); // a claim, and no folder
    expect(listing(out).attempts).toEqual([]);
    const second = inProcess(5, out, control);
    await until('the job to complete', async () => (await queue.getJobState(id!)) === 'completed');
    const [firstTry, secondTry] = executions(control).map(([, name]) => name);
    expect(listing(out)).toEqual({ tries: [], attempts: [id] }); // the dead try's folder cleared
    expect(wholeFrom(out, id!)).toBe(secondTry);
    expect(firstTry).not.toBe(secondTry);
    expect(second.logs.join('\n')).toMatch(
      /took over the commit claim of try .* pid \d+: it holds no lock and its folder is not in place/,
    );
    expect(await claim()).toMatchObject({ committed: true, result: { status: 'complete', id } });
    await second.stop(0);
  });

  it('SIGTERM with Redis unreachable (a network split): the worker still ends, its job left to BullMQ’s stalled-job recovery; another worker completes it once', async ({
    expect,
  }) => {
    const { out, control } = folders(mkdtempSync(path.join(work, 'term-split-')));
    const queue = openQueue(6);
    const [id] = await enqueue(6, [7]);
    const proxy = await startTcpProxy(redis.port);
    const first = startChild(6, out, control, { url: proxy.url(6), graceMs: 300 });
    await until('the first try', () => executions(control).length === 1);
    proxy.split();
    first.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toMatch(/not put back to waiting \(Redis did not answer the requeue within 1\.5 s\)/);
    expect(first.output()).toContain('stopped');
    writeFileSync(path.join(control, 'release'), '');
    const second = inProcess(6, out, control);
    await until('the job to complete', async () => (await queue.getJobState(id!)) === 'completed');
    expect(listing(out)).toEqual({ tries: [], attempts: [id] });
    expect(wholeFrom(out, id!)).toBe(executions(control)[1]![1]);
    await second.stop(0);
    await proxy.close();
  });

  it.skipIf(!ROOT)(
    'two workers in two "containers" (PID namespaces, one hostname: root only, skipped otherwise) share one output folder: neither takes the other’s live try for a dead one',
    async ({ expect }) => {
      const { out, control } = folders(mkdtempSync(path.join(work, 'containers-')));
      const queue = openQueue(7);
      const [first, second] = await enqueue(7, [8, 9]);
      // The worker is pid 2 in one, pid 1 in the other: pid 2 does not exist in the second's namespace.
      const a = startChild(7, out, control, { container: 2 });
      await until('the first to take a job', () => listing(out).tries.length === 1);
      const [onA] = listing(out).tries;
      const b = startChild(7, out, control, { container: 1 });
      await until('the second to take the other', () => listing(out).tries.length === 2);
      const onB = listing(out).tries.find((n) => n !== onA)!;
      const hostOf = (name: string) => /\.partial-(.+)-\d+-[0-9a-f]{8}$/.exec(name)![1]!;
      expect(onA).toMatch(/-2-[0-9a-f]{8}$/);
      expect(onB).toMatch(/-1-[0-9a-f]{8}$/);
      // One hostname and boot id; the PID namespace tells them apart.
      expect(hostOf(onA).split('.').slice(0, -1)).toEqual(hostOf(onB).split('.').slice(0, -1));
      expect(hostOf(onA)).not.toBe(hostOf(onB));
      await sleep(3500); // more than two sweep periods (1.5 s) of each
      expectLiveTriesKept(expect, [a, b], [onA, onB], out);
      writeFileSync(path.join(control, 'release'), '');
      await until('both jobs to complete', async () => (await queue.getCompletedCount()) === 2);
      expect(listing(out)).toEqual({ tries: [], attempts: [first!, second!].sort() });
      for (const id of [first!, second!]) wholeFrom(out, id);
      expect(executions(control)).toHaveLength(2);
      for (const w of [a, b]) w.kill('SIGTERM');
      expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
    },
  );
});
