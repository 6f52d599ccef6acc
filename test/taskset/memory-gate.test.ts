// Evaluation processes start only when the memory they need is available beyond what started ones still need.
import { describe, expect, it, vi } from 'vitest';
import { availableBytes, reserveMemory } from '../../taskset/memory-gate.ts';

describe('memory gate', () => {
  it('waits, and says so, while an earlier reservation holds the memory; goes on when it is released', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const available = availableBytes();
      expect(available).toBeGreaterThan(0);
      const releaseFirst = await reserveMemory(available / 2, () => undefined, 'first', 10);
      let secondStarted = false;
      const second = reserveMemory(available * 0.75, () => undefined, 'second', 10).then((release) => ((secondStarted = true), release));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(secondStarted).toBe(false);
      expect(stderr.mock.calls.map(([text]) => String(text)).join('')).toMatch(/second: waiting for memory \(needs ~[\d.]+ GiB/);
      releaseFirst();
      (await second)();
      expect(secondStarted).toBe(true);
      // With nothing of ours running, waiting cannot help: it starts, and says what it lacks.
      (await reserveMemory(available * 4, () => undefined, 'huge', 10))();
      expect(stderr.mock.calls.map(([text]) => String(text)).join('')).toMatch(/huge: needs ~[\d.]+ GiB, [\d.]+ GiB available; starting anyway/);
    } finally {
      stderr.mockRestore();
    }
  });
});
