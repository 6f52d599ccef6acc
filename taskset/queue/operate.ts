// What an operator does to the queue: put failed jobs back, remove finished ones, pause and resume it. A job removed
// takes its commit claim (fence.ts) with it, so an attempt enqueued again may be run again.
import { Queue, type Job, type RedisOptions } from 'bullmq';
import { QUEUE_NAME } from './connection.ts';
import type { JobResult } from './worker.ts';

async function withQueue<T>(connection: RedisOptions, work: (queue: Queue) => Promise<T>): Promise<T> {
  const queue = new Queue(QUEUE_NAME, { connection });
  try {
    return await work(queue);
  } finally {
    await queue.close();
  }
}

/** A job completed with a deterministic failure (a refused patch, a checker's error): failed, as status counts it. */
const failedResult = (job: Job) => (job.returnvalue as JobResult | null)?.status === 'failed';

/**
 * Failed jobs back to waiting: those named by `ids`, else every failed one (failed for good, or completed with a
 * deterministic failure). Returns the ids put back, and the ids named that were not failed.
 */
export function retryFailed(
  connection: RedisOptions,
  ids?: readonly string[],
): Promise<{ retried: string[]; notFailed: string[] }> {
  return withQueue(connection, async (queue) => {
    const candidates = ids
      ? await Promise.all(ids.map(async (id) => (await queue.getJob(id)) ?? id))
      : [...(await queue.getJobs(['failed'])), ...(await queue.getJobs(['completed'])).filter(failedResult)];
    const retried: string[] = [];
    const notFailed: string[] = [];
    for (const job of candidates) {
      if (typeof job === 'string' || !job) {
        notFailed.push(String(job));
        continue;
      }
      const state = await job.getState();
      if (state === 'failed') await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      else if (state === 'completed' && failedResult(job)) {
        await queue.client.then((c) => c.del(queue.toKey(`${job.id}:commit`)));
        await job.retry('completed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      } else {
        notFailed.push(job.id!);
        continue;
      }
      retried.push(job.id!);
    }
    return { retried, notFailed };
  });
}

/** Remove finished jobs (done, or failed) finished more than `olderThanMs` ago; returns their ids. */
export function cleanFinished(connection: RedisOptions, which: 'done' | 'failed', olderThanMs = 0): Promise<string[]> {
  return withQueue(connection, async (queue) => {
    const ids = await queue.clean(olderThanMs, 0, which === 'done' ? 'completed' : 'failed');
    const client = await queue.client;
    if (ids.length > 0) await client.del(...ids.map((id) => queue.toKey(`${id}:commit`)));
    return ids.sort();
  });
}

export function pauseQueue(connection: RedisOptions, paused: boolean): Promise<void> {
  return withQueue(connection, (queue) => (paused ? queue.pause() : queue.resume()));
}
