// A pilot on the queue end to end, on the committed toy target through the real CLIs: one Redis
// (scripts/redis-server.ts), two service processes and one queue for the whole file, workers as processes. Executions
// are counted as the services see them (one episode per try, its label naming the try's folder). Three workers on two
// services run every attempt once (two episodes), with run-pilot's rewards, each try's episode deleted; the third stays
// on. Killed (SIGKILL) mid-attempt, its job is taken over by a worker on the other service (the killed try's episode
// deleted by its service once its lease runs out), which then sees three more disruptions through, each attempt ending
// with run-pilot's reward and one folder: Redis restarted mid-run (append-only on); its lock lost while the patched
// weights are evaluated (the evaluation process ends with the try, not after it); its service, reached through a TCP
// proxy, unreachable for longer than the episode's lease (the service deletes the episode: a lost try, run again
// uncounted). Smoke sizes: the first item of each kind, the built-in rank-one editor (no API), which is deterministic,
// so each later attempt is a further repeat with run-pilot's reward, its pristine outputs from the workers' pristine
// cache (filled by the first case), its patch evaluated.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Checkpoint } from '../../engine/index.ts';
import { startServiceProcess, type ServiceHandle } from '../../scripts/service-process.ts';
import { completedAttempt } from '../../taskset/attempt.ts';
import { isRunning, type ProcessIdentity } from '../../taskset/file-lock.ts';
import { queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { attemptJob } from '../../taskset/queue/job.ts';
import { laneName } from '../../taskset/queue/lanes.ts';
import { attemptSettings } from '../../taskset/queue/settings.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
const EDITOR = 'builtin:rank-one';
const QUICK = ['--items-per-kind', '1'];
vi.setConfig({ testTimeout: 300_000, hookTimeout: 300_000 });

let work: string;
let redis: RedisHandle;
let proxy: TcpProxy;
const services: ServiceHandle[] = [];
const envFiles: string[] = [];
const children: ChildProcess[] = [];
const queues: Queue[] = [];
let calibration: string;
const cli = (args: string[]) => exec(process.execPath, [CLI, ...args], { cwd: work, maxBuffer: 1 << 24 });

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-e2e-'));
  const service = (name: string) => startServiceProcess({ modelDir: TOY_TARGET_DIR, outputDir: path.join(work, name) });
  const [started, gpu0, gpu1] = await Promise.all([startRedis(), service('gpu0'), service('gpu1')]); // at once
  redis = started;
  services.push(gpu0, gpu1);
  // The second service is reached through a proxy, which a case splits from its worker.
  proxy = await startTcpProxy(Number(new URL(services[1]!.url).port));
  for (const [index, url] of [services[0]!.url, `http://127.0.0.1:${proxy.port}`].entries()) {
    const file = path.join(work, `gpu${index}.env`);
    const { adminToken, editorToken } = services[index]!;
    writeFileSync(
      file,
      `IWIBENCH_SERVICE_URL=${url}\nIWIBENCH_ADMIN_TOKEN=${adminToken}\nIWIBENCH_EDITOR_TOKEN=${editorToken}\n`,
    );
    envFiles.push(file);
  }
  calibration = path.join(work, 'calibration.json');
  writeFileSync(
    calibration,
    JSON.stringify({
      format: 'iwibench-calibration/1',
      episodes: [0, 1].map((seed) => ({ family: 'local_factual_update', seed, params_key: `s${seed}` })),
    }),
  );
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const q of queues) await q.close();
  for (const s of services) await s.stop();
  await proxy?.close();
  await redis?.stop();
});

/** Locks of 2 s; each try's episode leased for 4 s (renewed every 1.3 s while it runs): a killed worker's goes soon. */
const TIMES = ['--lock-seconds', '2', '--episode-lease-seconds', '4'];

type WorkerProcess = { child: ChildProcess; exited: Promise<number | null>; stderr: () => string };

/** A worker process on service `gpu` (0 or 1); until the queue is done, unless `lasting`. */
function worker(db: number, gpu: number, outputDir: string, lasting = false): WorkerProcess {
  const args = ['pilot', 'worker', '--queue', redis.url(db), '--service-env', envFiles[gpu]!, '--model-dir'];
  const child = spawn(
    process.execPath,
    [CLI, ...args, TOY_TARGET_DIR, '--output-dir', outputDir, ...TIMES, ...(lasting ? [] : ['--exit-when-done'])],
    { cwd: work, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk;
    process.stderr.write(chunk);
  });
  return { child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))), stderr: () => stderr };
}

/** The attempt's readable id (run-pilot's): the queue's id without its settings hash. */
const readable = (id: string) => id.replace(/-h[0-9a-f]{8}$/, '');

/**
 * The episodes the services saw for attempt `id` (each try creates one, labelled with its try folder): on which
 * service, and whether it was deleted.
 */
function episodesOf(id: string, earlier: ReadonlySet<string> = new Set()): { service: number; deleted: boolean }[] {
  return ['gpu0', 'gpu1'].flatMap((name, service) => {
    const root = path.join(work, name, 'episodes');
    if (!existsSync(root)) return [];
    return readdirSync(root).flatMap((episode) => {
      if (earlier.has(path.join(root, episode))) return [];
      const spec = JSON.parse(readFileSync(path.join(root, episode, 'spec.json'), 'utf8')) as { label?: string };
      if (!spec.label?.includes(`${id}.partial-`)) return [];
      const state = JSON.parse(readFileSync(path.join(root, episode, 'state.json'), 'utf8')) as { status: string };
      return [{ service, deleted: state.status === 'deleted' }];
    });
  });
}

/** Every episode the services have seen so far (a later case's count leaves them out: the ids repeat per database). */
const episodesSoFar = () =>
  new Set(
    ['gpu0', 'gpu1'].flatMap((name) => {
      const root = path.join(work, name, 'episodes');
      return existsSync(root) ? readdirSync(root).map((e) => path.join(root, e)) : [];
    }),
  );

function openQueue(db: number, arithmetic: string): Queue {
  const queue = new Queue(laneName(arithmetic), { connection: queueConnection({ queue: redis.url(db) }) });
  queues.push(queue);
  return queue;
}

/** Attempt folders (completed ones) of an output folder, by id, with their rewards. */
function rewards(outputDir: string): Record<string, number> {
  const dir = path.join(outputDir, 'attempts');
  return Object.fromEntries(
    readdirSync(dir)
      .filter((name) => !name.includes('.partial-'))
      .map((name) => [name, completedAttempt(path.join(dir, name))!.reward]),
  );
}

/** A try folder of `outputDir` holding `file`, once there is one. */
async function tryWith(outputDir: string, file: string): Promise<string> {
  const attempts = path.join(outputDir, 'attempts');
  for (;;) {
    const partial = existsSync(attempts)
      ? readdirSync(attempts).find((n) => n.includes('.partial-') && existsSync(path.join(attempts, n, file)))
      : undefined;
    if (partial) return path.join(attempts, partial);
    await sleep(50);
  }
}

/** Until `check` holds (each case's own timeout bounds the wait). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await check())) await sleep(100);
}

describe('a pilot on the queue, on the toy target (database 1)', () => {
  /** run-pilot's rewards, by readable id. */
  let expected: Record<string, number>;
  const out = () => path.join(work, 'queued');
  let queue: Queue;
  let target: { model: string; revision: string };
  /** The worker that stays (the third of the first case, then the one that takes over from it when it is killed). */
  let lasting: WorkerProcess;

  /** One more attempt, as `pilot enqueue` makes it (episode `seed`, repeat `repeat`). */
  async function enqueue(seed: number, repeat: number): Promise<string> {
    const settings = attemptSettings({ model: EDITOR }, { itemsPerKind: 1, target });
    const job = attemptJob({ family: 'local_factual_update', seed }, EDITOR, repeat, settings, calibration);
    await enqueueAttempts(queueConnection({ queue: redis.url(1) }), [job], { retries: 3, backoffMs: 100 });
    return job.id;
  }

  /** The attempt completed with run-pilot's reward (rank-one is deterministic: any repeat's is the first's). */
  async function completedAsRunPilot(id: string) {
    await until(async () => (await queue.getJobState(id)) === 'completed');
    const plain = readable(id).replace(/-a\d+$/, '-a0');
    expect(completedAttempt(path.join(out(), 'attempts', id))!.reward).toBe(expected[plain]);
    expect((await queue.getJob(id))!.returnvalue.reward).toBe(expected[plain]);
    await until(() => !readdirSync(path.join(out(), 'attempts')).some((n) => n.includes('.partial-'))); // one folder
  }

  beforeAll(() => {
    const checkpoint = Checkpoint.open({ modelDir: TOY_TARGET_DIR });
    target = { model: checkpoint.modelId, revision: checkpoint.revision };
    checkpoint.close();
  });
  afterAll(async () => {
    lasting?.child.kill('SIGTERM');
    expect(await lasting?.exited).toBe(0);
  });

  it('three workers on two services finish every attempt once, with the rewards of run-pilot on one machine', async () => {
    // run-pilot on one machine, and the same attempts on the queue, at once: the rewards are compared at the end.
    const single = path.join(work, 'run-pilot');
    const runPilot = cli(
      ['run-pilot', calibration, '--model-dir', TOY_TARGET_DIR, '--service-env', envFiles[0]!].concat([
        '--output-dir',
        single,
        '--editor-model',
        EDITOR,
        ...QUICK,
      ]),
    );
    const enqueue = ['pilot', 'enqueue', calibration, '--queue', redis.url(1), '--model-dir', TOY_TARGET_DIR];
    const enqueued = JSON.parse((await cli([...enqueue, '--editor-model', EDITOR, ...QUICK, '--json'])).stdout);
    expect(enqueued).toMatchObject({ added: 2 });
    queue = openQueue(1, enqueued.arithmetic);
    const [first, second] = [worker(1, 0, out()), worker(1, 1, out())];
    lasting = worker(1, 0, out(), true);
    expect(await Promise.all([first.exited, second.exited])).toEqual([0, 0]); // nothing left to run
    await runPilot;
    expected = rewards(single);
    expect(Object.keys(expected)).toHaveLength(2);
    expect(Object.values(expected).some((r) => r > 0)).toBe(true); // rank-one earns something on a factual update
    const queued = rewards(out());
    expect(Object.fromEntries(Object.entries(queued).map(([id, r]) => [readable(id), r]))).toEqual(expected);
    expect(readdirSync(path.join(out(), 'attempts')).sort()).toEqual(Object.keys(queued).sort());
    const jobs = await queue.getJobs(['completed']);
    expect(jobs.map((j) => [j.id, j.returnvalue.reward]).sort()).toEqual(Object.entries(queued).sort());
    // Each attempt ran once, as its service saw it, and its episode is gone (BullMQ's attemptsMade would not show a
    // job run again after a stall).
    for (const id of Object.keys(queued)) {
      const seen = episodesOf(id);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.deleted).toBe(true);
    }
  });

  it('a worker killed (SIGKILL) mid-attempt: a worker on the other service takes the job over, and one folder remains', async () => {
    const earlier = episodesSoFar();
    const id = await enqueue(1, 1); // the third worker of the first case, on service 0, takes it
    await tryWith(out(), 'trace.jsonl'); // under way
    lasting.child.kill('SIGKILL');
    await lasting.exited;
    lasting = worker(1, 1, out(), true);
    await completedAsRunPilot(id);
    // Two executions: the killed one on service 0, the second on service 1. The second deleted its episode; the
    // killed one's is deleted by its service once its lease runs out, unrenewed.
    const seen = episodesOf(id, earlier);
    expect(seen.map((e) => e.service)).toEqual([0, 1]);
    expect(seen[1]!.deleted).toBe(true);
    await until(() => episodesOf(id, earlier)[0]!.deleted);
    expect((await queue.getJob(id))!.stalledCounter).toBe(1);
  });

  it('Redis restarted mid-run (append-only on): the run completes, nothing lost', async () => {
    const id = await enqueue(0, 1);
    await tryWith(out(), 'trace.jsonl');
    await redis.restart();
    await completedAsRunPilot(id);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 4, failed: 0 });
  });

  it('its lock lost while the patch is evaluated: the evaluation process ends with the try, not after it; the job is run again', async () => {
    const id = await enqueue(0, 2);
    const folder = await tryWith(out(), 'outputs-edited.json.pid');
    const evaluation = JSON.parse(
      readFileSync(path.join(folder, 'outputs-edited.json.pid'), 'utf8'),
    ) as ProcessIdentity;
    // Another worker's token in the lock (as after a partition): the renewal fails, the try stops.
    await ((await queue.client) as unknown as Redis).set(queue.toKey(`${id}:lock`), 'another', 'PX', 2000);
    let outputs = false;
    await until(() => {
      outputs ||= existsSync(path.join(folder, 'outputs-edited.json'));
      return !isRunning(evaluation);
    });
    expect(outputs).toBe(false); // ended, not finished
    expect(lasting.child.exitCode).toBe(null); // while the worker runs on
    await completedAsRunPilot(id);
  });

  it('its service unreachable past the episode’s lease: the service deletes the episode, and the try is lost, not failed: run again uncounted', async () => {
    const earlier = episodesSoFar();
    // Cut off from the service as the editor asks for its brief: the episode is made, then nothing gets through.
    const cut = proxy.splitAt('/brief');
    const id = await enqueue(1, 2);
    await cut;
    await until(() => episodesOf(id, earlier)[0]?.deleted === true); // its lease ran out
    proxy.heal();
    await completedAsRunPilot(id);
    expect(lasting.stderr()).toMatch(
      new RegExp(
        `${id}: the service deleted this attempt's episode: its lease \\(4 s\\) ran out .*: back to waiting, this try not counted`,
      ),
    );
    const job = (await queue.getJob(id))!;
    expect([job.attemptsMade, job.stalledCounter]).toEqual([1, 0]);
    expect(episodesOf(id, earlier)).toEqual([
      { service: 1, deleted: true },
      { service: 1, deleted: true },
    ]);
  });
});
