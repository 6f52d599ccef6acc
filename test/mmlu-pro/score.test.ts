import { describe, expect, it } from 'vitest';
import { guessIndex, mulberry32, rates, scoreOne, tally } from '../../mmlu-pro/score.ts';

const record = (question_id: number, pred: string | null, answer = 'C', answer_index = 2, options = 10) => ({
  question_id,
  pred,
  answer,
  answer_index,
  options: Array.from({ length: options }, (_, i) => `option ${i}`),
});

describe('guessIndex', () => {
  it('matches an independent mulberry32 (computed in Python) for pinned questions', () => {
    // floor(mulberry32(12345 + question_id) * options), values from a separate Python implementation.
    expect(mulberry32(12345)).toBeCloseTo(0.9797282677609473, 15);
    expect(guessIndex(0, 10)).toBe(9);
    expect(guessIndex(70, 10)).toBe(1);
    expect(guessIndex(3983, 7)).toBe(3);
    expect(guessIndex(12256, 4)).toBe(0);
    expect(guessIndex(1, 3)).toBe(1);
  });

  it('is deterministic, in range, and close to uniform over many questions', () => {
    const counts = Array(10).fill(0);
    let unstable = 0;
    for (let id = 0; id < 20_000; id++) {
      const g = guessIndex(id, 10);
      if (g !== guessIndex(id, 10) || g < 0 || g > 9) unstable += 1;
      counts[g] += 1;
    }
    expect(unstable).toBe(0);
    for (const c of counts) expect(Math.abs(c - 2000)).toBeLessThan(200);
  });
});

describe('scoring', () => {
  it('scores a letter against `answer` and an unparsed answer as the seeded guess against `answer_index`', () => {
    expect(scoreOne(record(5, 'C'))).toEqual({ correct: true, guessed: false });
    expect(scoreOne(record(5, 'D'))).toEqual({ correct: false, guessed: false });
    // question 70, 10 options: the guess is index 1.
    expect(scoreOne(record(70, null, 'B', 1))).toEqual({ correct: true, guessed: true });
    expect(scoreOne(record(70, null, 'C', 2))).toEqual({ correct: false, guessed: true });
  });

  it('tallies raw counts and derives the rates from them', () => {
    const t = tally([record(1, 'C'), record(2, 'C'), record(3, 'A'), record(70, null, 'B', 1), record(0, null, 'A', 0)]);
    expect(t).toEqual({ total: 5, correct: 3, random_guesses: 2, random_correct: 1 });
    expect(rates(t)).toEqual({ accuracy: 3 / 5, adjusted_accuracy: 2 / 3, unparsed_rate: 2 / 5 });
    expect(rates(tally([]))).toEqual({ accuracy: null, adjusted_accuracy: null, unparsed_rate: null });
  });
});
