// Where a queue stands: its attempts counted per family and editor (waiting, active, done, failed), each failure with
// its reason, and a progress bar; each running job with its worker (host, pid), since when and its phase; each job
// waiting to retry with its tries and last error; whether the queue is paused; and, with more than one lane (lanes.ts),
// the counts per arithmetic. A failure is either a job that failed for good (a malformed job, transient errors past
// their retries) or an attempt that ended in a deterministic error (the job completed with it).
import type { Job, Queue, RedisOptions } from 'bullmq';
import { Lanes, PAUSED_KEY } from './lanes.ts';
import type { TryProgress } from './progress.ts';
import type { JobResult } from './worker.ts';

export type StatusCounts = { waiting: number; active: number; done: number; failed: number };
export type QueueStatus = {
  total: number;
  counts: StatusCounts;
  rows: ({ family: string; editor: string } & StatusCounts)[];
  /** Per lane: its arithmetic (the engine's precision and device: lanes.ts) and counts. */
  lanes: ({ lane: string; arithmetic: string } & StatusCounts)[];
  failures: { id: string; reason: string }[];
  paused: boolean;
  /** Running jobs, and jobs waiting to retry: where, since when, doing what, the tries so far, the last error. */
  jobs: JobLine[];
};

export type JobLine = {
  id: string;
  state: 'active' | 'retrying';
  /** Tries started (BullMQ's attemptsStarted: a try re-run after its worker died counts too), and allowed. */
  tries: number;
  max_tries: number;
  worker?: { host: string; pid: number };
  since?: string;
  phase?: string;
  last_error?: string;
};

function jobLine(job: Job, state: JobLine['state']): JobLine {
  const progress = (typeof job.progress === 'object' ? job.progress : {}) as Partial<TryProgress>;
  // processedBy is the worker's name, `<host>:<pid>` (worker.ts).
  const by = job.processedBy ? /^(.*):(\d+)$/.exec(job.processedBy) : null;
  const running = state === 'active';
  return {
    id: job.id!,
    state,
    tries: job.attemptsStarted,
    max_tries: job.opts.attempts ?? 1,
    ...(running && by ? { worker: { host: by[1]!, pid: Number(by[2]) } } : {}),
    ...(running && job.processedOn ? { since: new Date(job.processedOn).toISOString() } : {}),
    ...(running ? { phase: progress.phase ?? 'starting' } : {}),
    ...(job.failedReason ? { last_error: job.failedReason } : {}),
  };
}

const STATES = ['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed'] as const;

export function queueStatus(connection: RedisOptions): Promise<QueueStatus> {
  return Lanes.use(connection, async (lanes) => {
    const rows = new Map<string, QueueStatus['rows'][number]>();
    const perLane: QueueStatus['lanes'] = [];
    const failures: QueueStatus['failures'] = [];
    const counts: StatusCounts = { waiting: 0, active: 0, done: 0, failed: 0 };
    const jobs: JobLine[] = [];
    let paused = (await lanes.client.exists(PAUSED_KEY)) === 1;
    for (const { lane, arithmetic, queue } of await lanes.all()) {
      const laneCounts = { lane, arithmetic, waiting: 0, active: 0, done: 0, failed: 0 };
      perLane.push(laneCounts);
      paused ||= await queue.isPaused();
      for (const state of STATES) {
        for (const job of await queue.getJobs([state])) {
          if (!job) continue;
          if (state === 'active') jobs.push(jobLine(job, 'active'));
          if (state === 'delayed' && job.failedReason) jobs.push(jobLine(job, 'retrying'));
          const data = (job.data ?? {}) as { family?: unknown; editor_label?: unknown };
          const family = typeof data.family === 'string' ? data.family : '(malformed)';
          const editor = typeof data.editor_label === 'string' ? data.editor_label : '(malformed)';
          const key = `${family}\u0000${editor}`;
          const row = rows.get(key) ?? { family, editor, waiting: 0, active: 0, done: 0, failed: 0 };
          rows.set(key, row);
          const result = job.returnvalue as JobResult | null;
          const column: keyof StatusCounts =
            state === 'active'
              ? 'active'
              : state === 'failed' || result?.status === 'failed'
                ? 'failed'
                : state === 'completed'
                  ? 'done'
                  : 'waiting';
          row[column]++;
          laneCounts[column]++;
          counts[column]++;
          if (state === 'failed') failures.push({ id: job.id!, reason: job.failedReason });
          else if (result?.status === 'failed') failures.push({ id: job.id!, reason: result.error });
        }
      }
    }
    const sorted = [...rows.values()].sort((a, b) =>
      a.family === b.family ? (a.editor < b.editor ? -1 : 1) : a.family < b.family ? -1 : 1,
    );
    const total = counts.waiting + counts.active + counts.done + counts.failed;
    return {
      total,
      counts,
      rows: sorted,
      lanes: perLane,
      failures: failures.sort((a, b) => (a.id < b.id ? -1 : 1)),
      paused,
      jobs: jobs.sort((a, b) => (a.id < b.id ? -1 : 1)),
    };
  });
}

/** The status as text: a table per family and editor, a progress bar, then every failure's reason. */
export function statusText(status: QueueStatus, width = 40, now = Date.now()): string {
  const header = ['family', 'editor', 'waiting', 'active', 'done', 'failed'];
  const cells = status.rows.map((r) => [r.family, r.editor, r.waiting, r.active, r.done, r.failed].map(String));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => (i < 2 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  const finished = status.counts.done + status.counts.failed;
  const filled = status.total === 0 ? 0 : Math.round((finished / status.total) * width);
  const { waiting, active, done, failed } = status.counts;
  return [
    line(header),
    ...cells.map(line),
    '',
    `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${finished}/${status.total} finished: ${done} done, ${failed} failed, ${active} active, ${waiting} waiting`,
    ...(status.paused ? ['the queue is PAUSED: workers take no new jobs (pilot resume)'] : []),
    ...(status.lanes.length > 1
      ? [
          '',
          'by arithmetic (each taken only by workers whose service computes it):',
          ...status.lanes.map(
            (l) => `  ${l.arithmetic}: ${l.waiting} waiting, ${l.active} active, ${l.done} done, ${l.failed} failed`,
          ),
        ]
      : []),
    ...(status.jobs.length > 0 ? ['', 'jobs:', ...status.jobs.map((j) => `  ${jobText(j, now)}`)] : []),
    ...(status.failures.length > 0 ? ['', 'failures:', ...status.failures.map((f) => `  ${f.id}: ${f.reason}`)] : []),
  ].join('\n');
}

function jobText(j: JobLine, now: number): string {
  const tries = `try ${j.tries}/${j.max_tries}`;
  if (j.state === 'retrying') return `${j.id}: waiting to retry (${tries}), last error: ${j.last_error}`;
  const since = j.since
    ? ` since ${j.since.slice(0, 19)}Z (${Math.round((now - Date.parse(j.since)) / 60_000)} min)`
    : '';
  const where = j.worker ? ` on ${j.worker.host} pid ${j.worker.pid}` : '';
  return `${j.id}: ${j.phase ?? 'starting'}${where}${since}, ${tries}`;
}

/** Jobs not yet finished (waiting, delayed for a retry, or running). */
export async function unfinishedJobs(queue: Queue): Promise<number> {
  const counts = await queue.getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'paused');
  return Object.values(counts).reduce((a, b) => a + b, 0);
}
