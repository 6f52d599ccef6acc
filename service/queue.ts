// The one execution queue: every inference and weight mutation runs through it, one job at a time, so episodes never
// see each other's weights mid-change. Jobs are taken round-robin across lanes (episodes, the OpenAI endpoints), so a
// client that keeps submitting cannot starve another; each job is bounded by the budgets, so none runs for long.
import { IwiError } from './errors.ts';

type Job = { run: () => Promise<unknown>; resolve: (value: unknown) => void; reject: (error: unknown) => void };

export class ExecutionQueue {
  private readonly lanes = new Map<string, Job[]>();
  private order: string[] = [];
  private running = false;
  private waiting = 0;

  constructor(private readonly maxWaiting = 256) {}

  /** Run `task` when its turn comes; lanes take turns. */
  run<T>(lane: string, task: () => Promise<T>): Promise<T> {
    if (this.waiting >= this.maxWaiting) throw new IwiError('QUEUE_FULL', `${this.waiting} jobs are waiting for the execution queue`);
    return new Promise<T>((resolve, reject) => {
      let jobs = this.lanes.get(lane);
      if (!jobs) {
        jobs = [];
        this.lanes.set(lane, jobs);
        this.order.push(lane);
      }
      jobs.push({ run: task, resolve: resolve as (value: unknown) => void, reject });
      this.waiting++;
      void this.drain();
    });
  }

  get pending(): number {
    return this.waiting;
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
