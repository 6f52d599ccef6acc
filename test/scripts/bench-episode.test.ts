// `bench episode`'s arguments (scripts/bench/episode.ts): the family, seed, batch limits and item count it runs.
import { describe, expect, it } from 'vitest';
import { episodeBenchFlags, generationFlop } from '../../scripts/bench/episode.ts';

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

describe('the work of a generation (generationFlop)', () => {
  const item = (prompt_tokens: number, output_tokens: number, stop_reason: string) => ({
    text: '',
    prompt_tokens,
    output_tokens,
    stop_reason,
  });
  it('counts prompt rows and decode steps through the decoder, and one head row per choice of a token', () => {
    const params = { decoder: 10, head: 1000 };
    // 5 prompt rows + 2 steps (3 tokens, the last at the cap); 3 choices of the head.
    expect(generationFlop(params, [item(5, 3, 'max_tokens')])).toBe(2 * (10 * 7 + 1000 * 3));
    // A stop at <end_of_turn> after 3 tokens: a 4th choice, whose token is not kept, and a 3rd step.
    expect(generationFlop(params, [item(5, 3, 'end_of_turn')])).toBe(2 * (10 * 8 + 1000 * 4));
    // <eos> as the first choice: the prompt only; a stop rule keeps its token (no extra choice); items add up.
    expect(generationFlop(params, [item(4, 0, 'eos'), item(2, 2, 'stop_rule')])).toBe(
      2 * (10 * 4 + 1000) + 2 * (10 * 3 + 1000 * 2),
    );
  });
});
