// Enqueuing attempts: one job each, on the lane of its arithmetic (lanes.ts), its BullMQ job id the attempt's id
// (readable, ending in its settings' hash). An attempt already on the queue (waiting, running, done or failed, on any
// lane) is counted and left as it is; one whose readable id is there with other settings refuses the whole enqueue,
// naming the fields that differ, before anything is added.
import type { RedisOptions } from 'bullmq';
import { readableId, type AttemptJob } from './job.ts';
import { Lanes } from './lanes.ts';
import { settingsDiff, type AttemptSettings } from './settings.ts';

/** How a job is retried on a transient failure: `retries` more tries, the first after `backoffMs`, then doubling. */
export type RetryPolicy = { retries: number; backoffMs: number };

export type EnqueueOutcome = {
  added: string[];
  alreadyQueued: string[];
  /** Attempts whose readable id is queued with other settings: nothing was added. */
  conflicts: { id: string; queued: string; differ: string[] }[];
};

export const ALL_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'paused', 'completed', 'failed'] as const;

export function enqueueAttempts(
  connection: RedisOptions,
  jobs: readonly AttemptJob[],
  retry: RetryPolicy,
): Promise<EnqueueOutcome> {
  return Lanes.use(connection, async (lanes) => {
    const queued = new Map<string, { id: string; settings: AttemptSettings }>();
    for (const { queue } of await lanes.all())
      for (const job of await queue.getJobs([...ALL_STATES])) {
        const data = job?.data as Partial<AttemptJob> | undefined;
        if (data?.settings && data.family && data.editor_label !== undefined && job?.id)
          queued.set(readableId(data as AttemptJob), { id: job.id, settings: data.settings });
      }
    const outcome: EnqueueOutcome = { added: [], alreadyQueued: [], conflicts: [] };
    const fresh: AttemptJob[] = [];
    for (const job of jobs) {
      const there = queued.get(readableId(job));
      if (!there) fresh.push(job);
      else if (there.id === job.id) outcome.alreadyQueued.push(job.id);
      else outcome.conflicts.push({ id: job.id, queued: there.id, differ: settingsDiff(there.settings, job.settings) });
    }
    if (outcome.conflicts.length > 0) return outcome;
    for (const job of fresh) {
      const queue = await lanes.open(job.settings.arithmetic);
      await queue.add(job.id, job, {
        jobId: job.id,
        attempts: retry.retries + 1,
        backoff: { type: 'exponential', delay: retry.backoffMs },
      });
      outcome.added.push(job.id);
    }
    return outcome;
  });
}

/** One line for refused attempts: how many, and each differing field once (queued → asked). */
export function conflictLine(conflicts: EnqueueOutcome['conflicts']): string {
  const fields = [...new Set(conflicts.flatMap((c) => c.differ))];
  return `refused: ${conflicts.length} attempt(s) already queued with other settings (queued → asked: ${fields.join('; ')}); nothing added (pilot clean removes finished jobs, or enqueue on another database)`;
}
