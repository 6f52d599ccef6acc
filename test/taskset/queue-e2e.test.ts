// A pilot on the queue end to end, on the committed toy target through the real CLIs: one Redis
// (scripts/redis-server.ts), two service processes, workers as processes. Executions are counted as the services see
// them (one episode per try, its label naming the try's folder). Three workers on two services run every attempt
// once, with run-pilot's rewards, each try's episode deleted; a worker killed (SIGKILL) mid-attempt leaves its job to
// a worker on the other service, which runs it again, and one folder remains, and its service deletes the killed
// try's episode once its lease runs out; Redis restarted mid-run (append-only) loses nothing. Smoke sizes: the first item of each kind, the built-in rank-one editor (no API).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServiceProcess, type ServiceHandle } from '../../scripts/service-process.ts';
import { completedAttempt } from '../../taskset/attempt.ts';
import { QUEUE_NAME, queueConnection } from '../../taskset/queue/connection.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
const EDITOR = 'builtin:rank-one';
const QUICK = ['--items-per-kind', '1'];
vi.setConfig({ testTimeout: 600_000, hookTimeout: 300_000 });

let work: string;
let redis: RedisHandle;
const services: ServiceHandle[] = [];
const envFiles: string[] = [];
const children: ChildProcess[] = [];
const queues: Queue[] = [];
let calibration: string;
const cli = (args: string[]) => exec(process.execPath, [CLI, ...args], { cwd: work, maxBuffer: 1 << 24 });

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-queue-e2e-'));
  redis = await startRedis();
  for (const name of ['gpu0', 'gpu1']) {
    const service = await startServiceProcess({ modelDir: TOY_TARGET_DIR, outputDir: path.join(work, name) });
    services.push(service);
    const file = path.join(work, `${name}.env`);
    const { url, adminToken, editorToken } = service;
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
      episodes: [0, 1, 2].map((seed) => ({ family: 'local_factual_update', seed, params_key: `s${seed}` })),
    }),
  );
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const q of queues) await q.close();
  for (const s of services) await s.stop();
  await redis?.stop();
});

/** Each try's episode leased for 2 s (renewed every 0.67 s while it runs): a killed worker's goes within ~3 s. */
const LEASE = ['--episode-lease-seconds', '2'];

/** A worker process on service `gpu` (0 or 1), until the queue is done; resolves with its exit code. */
function worker(db: number, gpu: number, outputDir: string): { child: ChildProcess; exited: Promise<number | null> } {
  const args = ['pilot', 'worker', '--queue', redis.url(db), '--service-env', envFiles[gpu]!, '--model-dir'];
  const child = spawn(
    process.execPath,
    [CLI, ...args, TOY_TARGET_DIR, '--output-dir', outputDir, '--lock-seconds', '3', ...LEASE, '--exit-when-done'],
    { cwd: work, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  children.push(child);
  return { child, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
}

const enqueue = (db: number, file = calibration) =>
  cli(
    [
      'pilot',
      'enqueue',
      file,
      '--queue',
      redis.url(db),
      '--model-dir',
      TOY_TARGET_DIR,
      '--editor-model',
      EDITOR,
    ].concat(QUICK, ['--json']),
  );

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

function openQueue(db: number): Queue {
  const queue = new Queue(QUEUE_NAME, { connection: queueConnection({ queue: redis.url(db) }) });
  queues.push(queue);
  return queue;
}

/** A calibration of the second episode alone. */
function oneEpisode(): string {
  const file = path.join(work, 'one.json');
  const episode = { family: 'local_factual_update', seed: 1, params_key: 's1' };
  writeFileSync(file, JSON.stringify({ format: 'iwibench-calibration/1', episodes: [episode] }));
  return file;
}

/** Every episode the services have seen so far (a later case's count leaves them out: the ids repeat per database). */
const episodesSoFar = () =>
  new Set(
    ['gpu0', 'gpu1'].flatMap((name) => {
      const root = path.join(work, name, 'episodes');
      return existsSync(root) ? readdirSync(root).map((e) => path.join(root, e)) : [];
    }),
  );

/** Attempt folders (completed ones) of an output folder, by id, with their rewards. */
function rewards(outputDir: string): Record<string, number> {
  const dir = path.join(outputDir, 'attempts');
  return Object.fromEntries(
    readdirSync(dir)
      .filter((name) => !name.includes('.partial-'))
      .map((name) => [name, completedAttempt(path.join(dir, name))!.reward]),
  );
}

/** Wait until a job is running and its temp folder holds the editor's trace (the attempt is under way). */
async function underWay(queue: Queue, outputDir: string): Promise<void> {
  for (;;) {
    if ((await queue.getActiveCount()) > 0 && existsSync(path.join(outputDir, 'attempts'))) {
      const partial = readdirSync(path.join(outputDir, 'attempts')).find((n) => n.includes('.partial-'));
      if (partial && existsSync(path.join(outputDir, 'attempts', partial, 'trace.jsonl'))) return;
    }
    await sleep(100);
  }
}

describe('a pilot on the queue, on the toy target', () => {
  let expected: Record<string, number>;

  it('three workers on two services finish every attempt once, with the rewards of run-pilot on one machine', async () => {
    const single = path.join(work, 'run-pilot');
    await cli(
      ['run-pilot', calibration, '--model-dir', TOY_TARGET_DIR, '--service-env', envFiles[0]!].concat([
        '--output-dir',
        single,
        '--editor-model',
        EDITOR,
        ...QUICK,
      ]),
    );
    expected = rewards(single);
    expect(Object.keys(expected)).toHaveLength(3);
    expect(Object.values(expected).some((r) => r > 0)).toBe(true); // rank-one earns something on a factual update

    expect(JSON.parse((await enqueue(1)).stdout)).toMatchObject({ added: 3 });
    const out = path.join(work, 'queued');
    const codes = await Promise.all([worker(1, 0, out), worker(1, 1, out), worker(1, 0, out)].map((w) => w.exited));
    expect(codes).toEqual([0, 0, 0]);
    const queued = rewards(out);
    expect(Object.fromEntries(Object.entries(queued).map(([id, r]) => [readable(id), r]))).toEqual(expected);
    expect(readdirSync(path.join(out, 'attempts')).sort()).toEqual(Object.keys(queued).sort());
    const jobs = await openQueue(1).getJobs(['completed']);
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
    const { out, id } = await disruptedAttempt(2, 'killed', async (first, out) => {
      first.child.kill('SIGKILL');
      await first.exited;
      expect(await worker(2, 1, out).exited).toBe(0);
    });
    expect(readdirSync(path.join(out, 'attempts'))).toEqual([id]); // the dead try's folder is cleared
    // Two executions: the killed one on service 0, the second on service 1. The second deleted its episode; the
    // killed one's is deleted by its service once its lease runs out, unrenewed.
    const seen = episodesOf(id, earlier);
    expect(seen.map((e) => e.service)).toEqual([0, 1]);
    expect(seen[1]!.deleted).toBe(true);
    for (let waited = 0; !episodesOf(id, earlier)[0]!.deleted; waited += 200) {
      expect(waited).toBeLessThan(15_000);
      await sleep(200);
    }
    const job = (await openQueue(2).getJob(id))!;
    expect(job.stalledCounter).toBe(1);
  });

  it('Redis restarted mid-run (append-only on): the run completes, nothing lost', async () => {
    await disruptedAttempt(3, 'restarted', async (first) => {
      await redis.restart();
      expect(await first.exited).toBe(0);
    });
  });

  /**
   * The second episode alone on queue `db`: a worker on service 0 takes it, `disrupt` strikes once the attempt is
   * under way and sees it through; the attempt then has run-pilot's reward, in its folder and as its job's result.
   */
  async function disruptedAttempt(
    db: number,
    name: string,
    disrupt: (first: ReturnType<typeof worker>, out: string) => Promise<void>,
  ) {
    await enqueue(db, oneEpisode());
    const queue = openQueue(db);
    const out = path.join(work, name);
    const first = worker(db, 0, out);
    await underWay(queue, out);
    await disrupt(first, out);
    const plain = Object.keys(expected).find((k) => k.includes('-s1-'))!;
    const id = Object.keys(rewards(out))[0]!;
    expect(readable(id)).toBe(plain);
    expect(rewards(out)).toEqual({ [id]: expected[plain] });
    expect((await queue.getJob(id))!.returnvalue.reward).toBe(expected[plain]);
    expect(await queue.getJobCounts('completed', 'failed')).toEqual({ completed: 1, failed: 0 });
    return { out, id };
  }
});
