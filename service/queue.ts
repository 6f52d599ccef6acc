// The one execution queue: every inference and weight mutation runs through it, one job at a time, so episodes never
// see each other's weights mid-change. Lanes (episodes, the OpenAI endpoints) take turns, and a long job takes its
// turn a slice at a time: it calls `slice.between()` between slices (prefill chunks, decode steps), and if another
// lane has work, that lane runs first. So another episode's small call waits for at most one slice of a long one.
// Jobs of one lane keep their order and never overlap, since a job's writes must not change weights under a
// parked job of the same episode.
import { IwiError } from './errors.ts';

/** What a job is given: the point between slices, and its cancellation. */
export type Slice = { between: () => Promise<void>; signal: AbortSignal };

export type JobOptions = {
  /** The client's cancellation (a request whose client has gone): out of the queue if waiting, else stopped at its next slice. */
  signal?: AbortSignal;
  /** Running time (parked time excluded) after which the job is stopped at its next slice with CALL_TIME_LIMIT. */
  timeLimitMs?: number;
};

type Job = {
  lane: string;
  task: (slice: Slice) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  controller: AbortController;
  timeLimitMs: number;
  /** Running time of earlier turns, and when the current turn began. */
  runMs: number;
  turnStart: number;
  started: boolean;
  resume?: () => void;
};

export class ExecutionQueue {
  private readonly lanes = new Map<string, Job[]>();
  private order: string[] = [];
  private running = false;
  private waiting = 0;
  /** Called when the running job parks or ends: the scheduler takes the next turn. */
  private yielded: (() => void) | undefined;

  constructor(
    private readonly maxWaiting = 256,
    private readonly defaultTimeLimitMs = Infinity,
  ) {}

  /** Run `task` when its turn comes; lanes take turns, slice by slice. */
  run<T>(lane: string, task: (slice: Slice) => Promise<T>, options: JobOptions = {}): Promise<T> {
    if (this.waiting >= this.maxWaiting)
      throw new IwiError('QUEUE_FULL', `${this.waiting} jobs are waiting for the execution queue`);
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        lane,
        task,
        resolve: resolve as (value: unknown) => void,
        reject,
        controller: new AbortController(),
        timeLimitMs: options.timeLimitMs ?? this.defaultTimeLimitMs,
        runMs: 0,
        turnStart: 0,
        started: false,
      };
      if (options.signal?.aborted) return reject(abortError());
      options.signal?.addEventListener('abort', () => this.cancel(job), { once: true });
      let jobs = this.lanes.get(lane);
      if (!jobs) {
        jobs = [];
        this.lanes.set(lane, jobs);
        this.order.push(lane);
      }
      jobs.push(job);
      this.waiting++;
      void this.drain();
    });
  }

  /** Jobs not yet started. */
  get pending(): number {
    return this.waiting;
  }

  private cancel(job: Job): void {
    if (job.started) {
      job.controller.abort(abortError()); // stopped at its next slice
      return;
    }
    const jobs = this.lanes.get(job.lane);
    const at = jobs?.indexOf(job) ?? -1;
    if (at < 0) return;
    jobs!.splice(at, 1);
    this.waiting--;
    if (jobs!.length === 0) {
      this.lanes.delete(job.lane);
      this.order = this.order.filter((lane) => lane !== job.lane);
    }
    job.reject(abortError());
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.order.length > 0) {
        const lane = this.order.shift()!;
        const jobs = this.lanes.get(lane)!;
        const job = jobs[0]!;
        const turn = new Promise<void>((resolve) => (this.yielded = resolve));
        job.turnStart = performance.now();
        if (job.started) job.resume!();
        else this.start(job);
        await turn;
        job.runMs += performance.now() - job.turnStart;
        if (job.resume)
          this.order.push(lane); // parked: its lane goes to the back of the line
        else {
          jobs.shift();
          if (jobs.length > 0) this.order.push(lane);
          else this.lanes.delete(lane);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private start(job: Job): void {
    job.started = true;
    this.waiting--;
    const slice: Slice = { between: () => this.between(job), signal: job.controller.signal };
    const end = () => {
      job.resume = undefined;
      this.yielded?.();
    };
    job.task(slice).then(
      (value) => (end(), job.resolve(value)),
      (error) => (end(), job.reject(error)),
    );
  }

  private async between(job: Job): Promise<void> {
    job.controller.signal.throwIfAborted();
    const ran = job.runMs + performance.now() - job.turnStart;
    if (ran > job.timeLimitMs) {
      throw new IwiError(
        'CALL_TIME_LIMIT',
        `the call ran ${(ran / 1000).toFixed(1)} s, more than the ${(job.timeLimitMs / 1000).toFixed(0)} s limit of one call`,
      );
    }
    if (this.order.length === 0) return; // nobody else is waiting: go on without a turn
    await new Promise<void>((resolve) => {
      job.resume = () => {
        job.resume = undefined;
        resolve();
      };
      this.yielded?.(); // drain sees job.resume set: parked, not finished
    });
    job.controller.signal.throwIfAborted();
  }
}

function abortError(): Error {
  return new DOMException('the request was cancelled', 'AbortError');
}
