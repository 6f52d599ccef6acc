// The execution queue's slices: a long job yields between slices to other lanes, keeps its lane's order, is
// cancelled out of the queue or at its next slice, and is stopped by the per-call time limit.
import { describe, expect, it } from 'vitest';
import { ExecutionQueue, type Slice } from '../../service/queue.ts';
import { isIwiError } from '../../service/errors.ts';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

/** A job of `slices` slices that logs each one. */
const sliced = (log: string[], name: string, slices: number) => async (slice: Slice) => {
  for (let i = 0; i < slices; i++) {
    log.push(`${name}${i}`);
    await tick();
    if (i + 1 < slices) await slice.between();
  }
  return name;
};

describe('ExecutionQueue slices', () => {
  it('another lane runs between the slices of a long job; its own lane waits for it to end', async () => {
    const queue = new ExecutionQueue();
    const log: string[] = [];
    const long = queue.run('a', sliced(log, 'A', 4));
    const sameLane = queue.run('a', sliced(log, 'a', 1));
    const small = queue.run('b', sliced(log, 'B', 1));
    const other = queue.run('c', sliced(log, 'C', 2));
    expect(await Promise.all([long, sameLane, small, other])).toEqual(['A', 'a', 'B', 'C']);
    // B waits for one slice of A, not for all of it; A's lane keeps its order (a after A).
    expect(log).toEqual(['A0', 'B0', 'C0', 'A1', 'C1', 'A2', 'A3', 'a0']);
  });

  it('goes on without a turn when nobody waits', async () => {
    const queue = new ExecutionQueue();
    const log: string[] = [];
    await queue.run('a', sliced(log, 'A', 3));
    expect(log).toEqual(['A0', 'A1', 'A2']);
  });

  it('removes a cancelled job that has not started, and stops a started one at its next slice', async () => {
    const queue = new ExecutionQueue();
    const log: string[] = [];
    const first = queue.run('a', sliced(log, 'A', 3));
    const controller = new AbortController();
    const waiting = queue.run('b', sliced(log, 'W', 1), { signal: controller.signal });
    expect(queue.pending).toBe(1);
    controller.abort();
    await expect(waiting).rejects.toThrow(/cancelled/);
    expect(queue.pending).toBe(0);
    await first;
    const running = new AbortController();
    const started = queue.run(
      'c',
      async (slice) => {
        running.abort();
        await slice.between();
        log.push('never');
      },
      { signal: running.signal },
    );
    await expect(started).rejects.toThrow(/cancelled/);
    expect(log).not.toContain('W0');
    expect(log).not.toContain('never');
    // 50 cancelled streams leave nothing queued.
    const blocker = queue.run('x', async (slice) => {
      for (let i = 0; i < 5; i++) {
        await tick();
        await slice.between();
      }
    });
    const aborted = Array.from({ length: 50 }, (_, i) => {
      const c = new AbortController();
      const p = queue.run(`s${i}`, sliced(log, 'S', 1), { signal: c.signal });
      c.abort();
      return p.catch((e: Error) => e.name);
    });
    expect(new Set(await Promise.all(aborted))).toEqual(new Set(['AbortError']));
    expect(queue.pending).toBe(0);
    await blocker;
  });

  it('stops a job past its time limit at its next slice, counting only its own running time', async () => {
    const queue = new ExecutionQueue(256, 30);
    const job = queue.run('a', async (slice) => {
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        await slice.between();
      }
    });
    const error = await job.catch((e: unknown) => e);
    expect(isIwiError(error, 'CALL_TIME_LIMIT')).toBe(true);
    expect(await queue.run('b', async () => 'next')).toBe('next');
  });
});
