// A try's hold on its job: aborted when BullMQ cannot renew the job's lock, when a check finds the lock gone or
// another's, when Redis has not answered for a lock period, when the attempt runs past its time limit, or when the
// worker shuts down. Every step with effects checks it first (`check`, given up after a lock period like every call of
// the worker's: reach.ts), and the commit's fencing step checks the lock again, atomically with its claim.
import type { Redis } from 'ioredis';
import { within } from './reach.ts';

export type LeaseEnd = 'lock' | 'timeout' | 'shutdown';

export class LeaseLost extends Error {
  override name = 'LeaseLost';
  constructor(
    readonly reason: LeaseEnd,
    message: string,
  ) {
    super(message);
  }
}

const MESSAGES: Record<LeaseEnd, string> = {
  lock: "this worker lost the job's lock (another worker may hold it now): the try is abandoned",
  timeout: 'the attempt ran past --attempt-timeout',
  shutdown: 'the worker shut down: the job goes back to waiting',
};

/** A lock lost because Redis did not answer: the lock has lapsed, or will the moment Redis answers. */
export const UNREACHABLE =
  "this worker could not reach Redis for a lock period: the job's lock has lapsed and the try is abandoned";

export class Lease {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    readonly client: Redis,
    readonly lockKey: string,
    readonly token: string,
    /** How long Redis may take to answer before the lock counts as lost. */
    readonly lockMs: number,
    timeoutMs?: number,
  ) {
    if (timeoutMs !== undefined) {
      this.timer = setTimeout(() => this.end('timeout', `${MESSAGES.timeout} (${describeMs(timeoutMs)})`), timeoutMs);
      this.timer.unref();
    }
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the lease ended, once it has. */
  get ended(): LeaseLost | undefined {
    return this.signal.aborted ? (this.signal.reason as LeaseLost) : undefined;
  }

  end(reason: LeaseEnd, message = MESSAGES[reason]): void {
    if (!this.signal.aborted) this.controller.abort(new LeaseLost(reason, message));
    clearTimeout(this.timer);
  }

  /** Throws unless the lease holds and Redis still has this try's token as the job's lock. */
  async check(): Promise<void> {
    this.signal.throwIfAborted();
    const held = await within(this.lockMs, 'the lock check', this.client.get(this.lockKey)).catch(() => {
      this.end('lock', UNREACHABLE);
    });
    if (held !== this.token) this.end('lock');
    this.signal.throwIfAborted();
  }

  release(): void {
    clearTimeout(this.timer);
  }
}

export function describeMs(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}
