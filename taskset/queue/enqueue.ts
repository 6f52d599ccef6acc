// Enqueuing attempts: one job each, its BullMQ job id the attempt's id, so that an attempt already on the queue
// (waiting, running, done or failed) is counted and left as it is.
import { Queue, type RedisOptions } from 'bullmq';
import type { AttemptJob } from './job.ts';
import { QUEUE_NAME } from './connection.ts';

/** How a job is retried on a transient failure: `retries` more tries, the first after `backoffMs`, then doubling. */
export type RetryPolicy = { retries: number; backoffMs: number };

export async function enqueueAttempts(
  connection: RedisOptions,
  jobs: readonly AttemptJob[],
  retry: RetryPolicy,
): Promise<{ added: string[]; alreadyQueued: string[] }> {
  const queue = new Queue(QUEUE_NAME, { connection });
  try {
    const added: string[] = [];
    const alreadyQueued: string[] = [];
    for (const job of jobs) {
      if (await queue.getJob(job.id)) {
        alreadyQueued.push(job.id);
        continue;
      }
      await queue.add(job.id, job, {
        jobId: job.id,
        attempts: retry.retries + 1,
        backoff: { type: 'exponential', delay: retry.backoffMs },
      });
      added.push(job.id);
    }
    return { added, alreadyQueued };
  } finally {
    await queue.close();
  }
}
