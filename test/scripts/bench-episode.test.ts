// `bench episode`'s arguments (scripts/bench/episode.ts): the family, seed, batch limits and item count it runs.
import { describe, expect, it } from 'vitest';
import { episodeBenchFlags } from '../../scripts/bench/episode.ts';

describe('bench episode flags', () => {
  it('defaults to the episode run-prime measured, at batch limits 8, 16 and 32, every item', () => {
    const flags = episodeBenchFlags([]);
    expect(flags).toMatchObject({ preset: 'gemma-3-1b-shape', family: 'local_factual_update', seed: 3, items: 0 });
    expect(flags.limits).toEqual([8, 16, 32]);
    expect(episodeBenchFlags(['--limits', '4, 64', '--items', '10', '--seed', '0']).limits).toEqual([4, 64]);
  });

  it('refuses an unknown family, batch limits that are not positive integers, and a negative item count', () => {
    expect(() => episodeBenchFlags(['--family', 'nope'])).toThrow(/--family must be one of .*local_factual_update/);
    expect(() => episodeBenchFlags(['--limits', '8,0'])).toThrow(/--limits must be positive integers/);
    expect(() => episodeBenchFlags(['--limits', '8,x'])).toThrow(/"x" is not an integer/);
    expect(() => episodeBenchFlags(['--limits', ''])).toThrow(/--limits must be positive integers/);
    expect(() => episodeBenchFlags(['--items', '-1'])).toThrow(/--items must be a whole number/);
  });
});
