// The one execution queue: every inference and weight mutation runs through it, one job at a time, so episodes never
// see each other's weights mid-change. Jobs are taken round-robin across lanes (episodes, the OpenAI endpoints), so a
// client that keeps submitting cannot starve another; each job is bounded by the budgets, so none runs for long.
// A job whose client has gone (its AbortSignal fired) leaves the queue at once if it has not started; a started job
// gets the signal and stops at its next step.
import { IwiError } from './errors.ts';

type Job = { lane: string; run: () => Promise<unknown>; resolve: (value: unknown) => void; reject: (error: unknown) => void };

const NEVER = new AbortController().signal;

export class ExecutionQueue {
  private readonly lanes = new Map<string, Job[]>();
  private order: string[] = [];
  private running = false;
  private waiting = 0;

  constructor(private readonly maxWaiting = 256) {}

  /**
   * Run `task` when its turn comes; lanes take turns. With `signal`: refused (CLIENT_GONE) if it has already fired,
   * removed from the queue (rejected with CLIENT_GONE) if it fires while the job waits, and passed to the task.
   */
  run<T>(lane: string, task: (signal: AbortSignal) => Promise<T>, signal: AbortSignal = NEVER): Promise<T> {
    if (signal.aborted) return Promise.reject(clientGone());
    if (this.waiting >= this.maxWaiting) throw new IwiError('QUEUE_FULL', `${this.waiting} jobs are waiting for the execution queue`);
    return new Promise<T>((resolve, reject) => {
      let started = false;
      const onAbort = () => {
        if (!started && this.remove(job)) reject(clientGone());
      };
      const job: Job = {
        lane,
        run: () => {
          started = true;
          signal.removeEventListener('abort', onAbort);
          return task(signal);
        },
        resolve: resolve as (value: unknown) => void,
        reject,
      };
      let jobs = this.lanes.get(lane);
      if (!jobs) {
        jobs = [];
        this.lanes.set(lane, jobs);
        this.order.push(lane);
      }
      jobs.push(job);
      this.waiting++;
      signal.addEventListener('abort', onAbort, { once: true });
      void this.drain();
    });
  }

  /** Jobs waiting (not counting the one running). */
  get pending(): number {
    return this.waiting;
  }

  /** Take a waiting job out of its lane; false when it is no longer waiting. */
  private remove(job: Job): boolean {
    const jobs = this.lanes.get(job.lane);
    const index = jobs ? jobs.indexOf(job) : -1;
    if (index < 0) return false;
    jobs!.splice(index, 1);
    if (jobs!.length === 0) {
      this.lanes.delete(job.lane);
      this.order = this.order.filter((lane) => lane !== job.lane);
    }
    this.waiting--;
    return true;
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.order.length > 0) {
        const lane = this.order.shift()!;
        const jobs = this.lanes.get(lane)!;
        const job = jobs.shift()!;
        if (jobs.length > 0) this.order.push(lane); // back of the line
        else this.lanes.delete(lane);
        this.waiting--;
        try {
          job.resolve(await job.run());
        } catch (error) {
          job.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }
}

export function clientGone(): IwiError {
  return new IwiError('CLIENT_GONE', 'the client closed the connection before the reply was complete');
}
