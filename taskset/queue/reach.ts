// Whether a worker reaches Redis. Its connections wait out a Redis restart (queueConnection: a command waits for the
// reconnection), so every call of ours is given up after a lock period (`within`): by then the job's lock has lapsed,
// or will the moment Redis answers again, and the job is BullMQ's to recover. A network split raises no error at all
// (the socket stays open, unanswered), so a watch pings Redis and, when nothing has answered for a whole lock period,
// stops the worker's tries: they can no longer commit.
import type { Redis } from 'ioredis';

export class RedisUnreachable extends Error {
  override name = 'RedisUnreachable';
}

/**
 * `work`, given up after `ms` (RedisUnreachable naming `what`). The command may still run once Redis answers; every
 * caller copes with that (a late claim is taken over, a late requeue finds the lock gone).
 */
export async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  work.catch(() => {}); // a rejection after we gave up is nobody's
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new RedisUnreachable(`Redis did not answer ${what} within ${Math.round(ms / 100) / 10} s`)),
      ms,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Pings Redis every quarter of a lock period; `onSilent` once it has not answered for a whole one (then each tick). */
export class RedisWatch {
  private lastAnswer = Date.now();
  private pinging = false;
  private silent = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    client: Promise<Redis>,
    lockMs: number,
    onSilent: (silentMs: number) => void,
    log: (line: string) => void,
  ) {
    const tick = () => {
      const silentMs = Date.now() - this.lastAnswer;
      if (silentMs >= lockMs) {
        if (!this.silent)
          log(`Redis has not answered for ${Math.round(silentMs / 1000)} s: stopping the running tries`);
        this.silent = true;
        onSilent(silentMs);
      }
      if (this.pinging) return; // one ping at a time: an unanswered one stays queued on the connection
      this.pinging = true;
      void client
        .then((c) => c.ping())
        .then(
          () => {
            this.lastAnswer = Date.now();
            if (this.silent) log('Redis answers again');
            this.silent = false;
          },
          () => {},
        )
        .finally(() => (this.pinging = false));
    };
    this.timer = setInterval(tick, Math.max(50, lockMs / 4));
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
