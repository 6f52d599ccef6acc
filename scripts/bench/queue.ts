// npx iwibench bench queue [--jobs 1000] [--workers 1,4,16] [--toy-episodes 4] [--skip-toy]
// The queue's own cost: --jobs no-op attempts (each still written as a whole folder and completed with its status)
// through 1, 4 and 16 workers on a throwaway redis-server, in jobs per second and time added per job against the
// attempt and its commit done directly in the same run; the fencing step's cost per job (the lock check and the
// commit claim, one Redis script, before the rename) against the plain rename of earlier versions, both in this run;
// then the toy pilot's attempts per minute (built-in rank-one editor, the first item of each kind) with one service
// and one worker, and with two of each, on this machine.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { writeFolderAtomic, writeJsonAtomic } from '../../core/files.ts';
import {
  attemptJob,
  attemptSettings,
  claimCommit,
  enqueueAttempts,
  queueConnection,
  startWorker,
  type AttemptJob,
  type AttemptStatus,
} from '../../taskset/index.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { parseFlags, parseIntList } from '../args.ts';
import { startRedis, type RedisHandle } from '../redis-server.ts';
import { startServiceProcess } from '../service-process.ts';
import { benchHeader } from './header.ts';

const exec = promisify(execFile);
const CLI = path.resolve(import.meta.dirname, '../../bin/iwibench.js');

const defaults = { jobs: 1000, workers: '1,4,16', 'toy-episodes': 4, 'skip-toy': false };

/** A no-op attempt: its folder holds attempt.json only. */
async function noop(job: AttemptJob, dir: string): Promise<AttemptStatus> {
  const status: AttemptStatus = {
    status: 'complete',
    id: job.id,
    family: job.family,
    seed: job.seed,
    editor: job.editor_label,
    reward: 0,
    stop_reason: 'final_reply',
    finished_at: new Date().toISOString(),
  };
  writeJsonAtomic(path.join(dir, 'attempt.json'), status, false);
  return status;
}

const SETTINGS = attemptSettings(
  { model: 'builtin:noop' },
  { itemsPerKind: 0, target: { model: 'none', revision: 'none' } },
);
const noopJobs = (count: number) =>
  Array.from({ length: count }, (_, seed) =>
    attemptJob({ family: 'local_factual_update', seed }, 'noop', 0, SETTINGS, 'bench'),
  );

/**
 * Each job's attempt and commit done directly, one after another: with the plain rename of earlier versions
 * (writeFolderAtomic), and with the fencing step first (the job's lock held, as a worker holds it), in this run.
 */
async function directCommits(redis: RedisHandle, jobs: number, work: string) {
  let start = performance.now();
  for (const job of noopJobs(jobs))
    await writeFolderAtomic(path.join(work, 'direct-plain', 'attempts', job.id), (temp) => noop(job, temp));
  const plainMs = (performance.now() - start) / jobs;
  const client = new Redis({ port: redis.port, host: '127.0.0.1', db: 15 });
  try {
    start = performance.now();
    for (const job of noopJobs(jobs)) {
      const keys = { lock: `bench:${job.id}:lock`, commit: `bench:${job.id}:commit` };
      await client.set(keys.lock, 'token'); // not timed apart: BullMQ sets it when the job is taken
      await writeFolderAtomic(path.join(work, 'direct-fenced', 'attempts', job.id), async (temp) => {
        const status = await noop(job, temp);
        const outcome = await claimCommit(client, keys, {
          token: 'token',
          host: 'bench',
          pid: process.pid,
          result: status,
        });
        if (outcome.kind !== 'claimed') throw new Error(`bench: the fence refused ${job.id} (${outcome.kind})`);
        return status;
      });
    }
    const fencedMs = (performance.now() - start) / jobs;
    // The lock's SET above is a round trip too: timed alone, so that the fence's share is the claim's.
    start = performance.now();
    for (const job of noopJobs(jobs)) await client.set(`bench:${job.id}:lock2`, 'token');
    const setMs = (performance.now() - start) / jobs;
    return {
      plain_ms_per_job: plainMs,
      fenced_ms_per_job: fencedMs - setMs,
      fence_ms_per_job: fencedMs - setMs - plainMs,
    };
  } finally {
    client.disconnect();
  }
}

async function noopThroughput(redis: RedisHandle, jobs: number, workerCounts: number[], work: string) {
  const direct = await directCommits(redis, jobs, work);
  const directMs = direct.fenced_ms_per_job;
  let start: number;
  const runs = [];
  for (const [index, count] of workerCounts.entries()) {
    const connection = queueConnection({ queue: redis.url(index + 1) });
    start = performance.now();
    await enqueueAttempts(connection, noopJobs(jobs), { retries: 0, backoffMs: 1000 });
    const enqueueMs = performance.now() - start;
    let done = 0;
    let finish!: () => void;
    const all = new Promise<void>((resolve) => (finish = resolve));
    start = performance.now();
    const workers = Array.from({ length: count }, () =>
      startWorker({
        connection,
        outputDir: path.join(work, `workers-${count}`),
        concurrency: 1,
        run: noop,
        onDone: () => ++done === jobs && finish(),
      }),
    );
    await all;
    const seconds = (performance.now() - start) / 1000;
    await Promise.all(workers.map((w) => w.stop(0)));
    const perJobMs = (seconds * 1000 * count) / jobs; // each worker's time per job
    runs.push({
      workers: count,
      jobs_per_second: jobs / seconds,
      per_job_ms: perJobMs,
      added_ms_per_job: perJobMs - directMs,
      enqueue_ms_per_job: enqueueMs / jobs,
    });
  }
  return { jobs, direct_ms_per_job: directMs, commit: direct, runs };
}

/** The toy pilot through the queue: `services` services, one worker each, `episodes` attempts; attempts per minute. */
async function toyPilot(redis: RedisHandle, db: number, services: number, episodes: number, work: string) {
  const dir = path.join(work, `toy-${services}`);
  const calibration = path.join(dir, 'calibration.json');
  const started = await Promise.all(
    Array.from({ length: services }, (_, i) =>
      startServiceProcess({ modelDir: TOY_TARGET_DIR, outputDir: path.join(dir, `service-${i}`) }),
    ),
  );
  try {
    const episodeList = Array.from({ length: episodes }, (_, seed) => ({ family: 'local_factual_update', seed }));
    writeFileSync(calibration, JSON.stringify({ format: 'iwibench-calibration/1', episodes: episodeList }));
    const queue = redis.url(db);
    const enqueue = [
      'pilot',
      'enqueue',
      calibration,
      '--queue',
      queue,
      '--model-dir',
      TOY_TARGET_DIR,
      '--editor-model',
      'builtin:rank-one',
    ];
    await exec(process.execPath, [CLI, ...enqueue, '--items-per-kind', '1']);
    const start = performance.now();
    await Promise.all(
      started.map((service, i) => {
        const env = path.join(dir, `service-${i}.env`);
        writeFileSync(
          env,
          `IWIBENCH_SERVICE_URL=${service.url}\nIWIBENCH_ADMIN_TOKEN=${service.adminToken}\nIWIBENCH_EDITOR_TOKEN=${service.editorToken}\n`,
        );
        const args = ['pilot', 'worker', '--queue', queue, '--service-env', env, '--model-dir', TOY_TARGET_DIR];
        return exec(process.execPath, [CLI, ...args, '--output-dir', path.join(dir, 'out'), '--exit-when-done']);
      }),
    );
    const minutes = (performance.now() - start) / 60_000;
    return { services, workers: services, attempts: episodes, attempts_per_minute: episodes / minutes };
  } finally {
    await Promise.all(started.map((s) => s.stop()));
  }
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  const workerCounts = parseIntList(flags.workers, '--workers');
  const work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-bench-queue-'));
  const redis = await startRedis();
  try {
    const noopFigures = await noopThroughput(redis, flags.jobs, workerCounts, work);
    const toy = flags['skip-toy']
      ? null
      : [
          await toyPilot(redis, workerCounts.length + 1, 1, flags['toy-episodes'], work),
          await toyPilot(redis, workerCounts.length + 2, 2, flags['toy-episodes'], work),
        ];
    const cpus = os.cpus();
    process.stdout.write(
      JSON.stringify(
        {
          ...benchHeader('queue', flags),
          machine: { cpus: cpus.length, cpu: cpus[0]?.model },
          noop: noopFigures,
          toy_pilot: toy,
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await redis.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
