import { describe, expect, it } from 'vitest';
import { Rng } from '../../core/random.ts';

const draws = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.nextUint32());

describe('Rng (sfc32 seeded from SHA-256 of a key)', () => {
  it('gives the same sequence for the same key and different ones for different keys', () => {
    expect(draws(new Rng('0.2.2/x/seed=1'), 50)).toEqual(draws(new Rng('0.2.2/x/seed=1'), 50));
    expect(draws(new Rng('0.2.2/x/seed=1'), 50)).not.toEqual(draws(new Rng('0.2.2/x/seed=2'), 50));
  });

  it('keeps draws in range and roughly uniform', () => {
    const rng = new Rng('uniform');
    const counts = new Array(10).fill(0);
    for (let i = 0; i < 20_000; i++) counts[rng.int(10)]++;
    for (const c of counts) expect(c).toBeGreaterThan(1_700);
    for (let i = 0; i < 1_000; i++) {
      const x = rng.range(-3, 3);
      expect(x >= -3 && x <= 3 && Number.isInteger(x)).toBe(true);
      const u = rng.next();
      expect(u >= 0 && u < 1).toBe(true);
    }
  });

  it('shuffles into a permutation and samples distinct elements', () => {
    const items = Array.from({ length: 30 }, (_, i) => i);
    const shuffled = new Rng('s').shuffle(items);
    expect([...shuffled].sort((a, b) => a - b)).toEqual(items);
    expect(shuffled).not.toEqual(items);
    expect(new Set(new Rng('s').sample(items, 12)).size).toBe(12);
    expect(() => new Rng('s').sample(items, 31)).toThrow(/31 of 30/);
    expect(() => new Rng('s').pick([])).toThrow(/empty/);
  });

  it('forks independent sub-streams: drawing from one never shifts another', () => {
    const a = new Rng('k');
    const b = new Rng('k');
    draws(a, 7);
    expect(draws(a.fork('controls'), 5)).toEqual(draws(b.fork('controls'), 5));
  });
});
