// What an operator does to the queue, on every lane (lanes.ts): put failed jobs back, remove finished ones, pause and
// resume it. A job removed takes its commit claim (fence.ts) with it, so an attempt enqueued again may be run again.
import type { Job, RedisOptions } from 'bullmq';
import { Lanes, PAUSED_KEY } from './lanes.ts';
import type { JobResult } from './worker.ts';

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
  return Lanes.use(connection, async (lanes) => {
    const all = await lanes.all();
    const candidates: (Job | string)[] = [];
    if (ids)
      for (const id of ids) {
        let found: Job | undefined;
        for (const { queue } of all) found ??= await queue.getJob(id);
        candidates.push(found ?? id);
      }
    else
      for (const { queue } of all)
        candidates.push(
          ...(await queue.getJobs(['failed'])),
          ...(await queue.getJobs(['completed'])).filter(failedResult),
        );
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
        await lanes.client.del(lanes.queue(job.queueName).toKey(`${job.id}:commit`));
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
  return Lanes.use(connection, async (lanes) => {
    const removed: string[] = [];
    for (const { queue } of await lanes.all()) {
      const ids = await queue.clean(olderThanMs, 0, which === 'done' ? 'completed' : 'failed');
      if (ids.length > 0) await lanes.client.del(...ids.map((id) => queue.toKey(`${id}:commit`)));
      removed.push(...ids);
    }
    return removed.sort();
  });
}

/** Pause or resume every lane; a lane first enqueued on while the queue is paused starts paused. */
export function pauseQueue(connection: RedisOptions, paused: boolean): Promise<void> {
  return Lanes.use(connection, async (lanes) => {
    if (paused) await lanes.client.set(PAUSED_KEY, '1');
    else await lanes.client.del(PAUSED_KEY);
    for (const { queue } of await lanes.all()) await (paused ? queue.pause() : queue.resume());
  });
}
