import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CPythonRandom } from '../../mmlu-pro/cpython-random.ts';
import { pythonFixed, pythonJson } from '../../mmlu-pro/python.ts';
import {
  guessIndex,
  mulberry32,
  originalGuess,
  categorySummary,
  EMPTY_TALLY,
  rates,
  scoreOne,
  tally,
} from '../../mmlu-pro/score.ts';

// The original's guess for n = 1…10 options, from CPython 3.11.7 on this machine:
//   python3 -c "import random; print([(random.seed(12345), random.randint(0, n - 1))[1] for n in range(1, 11)])"
const PYTHON_GUESSES = [0, 1, 1, 3, 3, 3, 3, 6, 6, 6];
//   python3 -c "import random; random.seed(12345); print([random.getrandbits(32) for _ in range(3)])"
const PYTHON_FIRST_WORDS = [1789368711, 3146859322, 43676229];
//   python3 -c "import random; random.seed(2**40 + 7); print(random.getrandbits(32))"   (a seed of two 32-bit words)
const PYTHON_TWO_WORD_SEED = 2635837658;

const record = (question_id: number, pred: string | null, answer = 'C', answer_index = 2, options = 10) => ({
  question_id,
  pred,
  answer,
  answer_index,
  options: Array.from({ length: options }, (_, i) => `option ${i}`),
});

describe("the original's random guess (CPython's Mersenne Twister)", () => {
  it('equals CPython for every option count 1-10, and for the raw words', () => {
    expect(Array.from({ length: 10 }, (_, i) => originalGuess(i + 1))).toEqual(PYTHON_GUESSES);
    const rng = new CPythonRandom(12345);
    expect([rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32)]).toEqual(PYTHON_FIRST_WORDS);
    expect(new CPythonRandom(2 ** 40 + 7).getrandbits(32)).toBe(PYTHON_TWO_WORD_SEED);
    // Where python3 is installed, the same values once more from the interpreter itself.
    const python = spawnSync(
      'python3',
      ['-c', 'import random; print([(random.seed(12345), random.randint(0, n - 1))[1] for n in range(1, 11)])'],
      { encoding: 'utf8' },
    );
    if (python.status === 0) expect(JSON.parse(python.stdout)).toEqual(PYTHON_GUESSES);
  });

  it('is the same for every question with the same option count under original and tiger; per question under lenient', () => {
    for (const profile of ['original', 'tiger'] as const)
      expect(guessIndex(profile, 1, 7)).toBe(guessIndex(profile, 9999, 7));
    // lenient: floor(mulberry32(12345 + question_id) * options), values from a separate Python implementation.
    expect(mulberry32(12345)).toBeCloseTo(0.9797282677609473, 15);
    expect(guessIndex('lenient', 0, 10)).toBe(9);
    expect(guessIndex('lenient', 70, 10)).toBe(1);
    expect(guessIndex('lenient', 3983, 7)).toBe(3);
  });

  it('rejects what CPython would not take as the script uses it', () => {
    expect(() => new CPythonRandom(-1)).toThrow(/non-negative/);
    expect(() => new CPythonRandom(12345).randint(3, 2)).toThrow(/not supported/);
  });
});

describe('scoring', () => {
  it("scores a letter against `answer` and an unparsed answer as the profile's guess against `answer_index`", () => {
    expect(scoreOne(record(5, 'C'), 'original')).toEqual({ correct: true, guessed: false });
    expect(scoreOne(record(5, 'D'), 'original')).toEqual({ correct: false, guessed: false });
    // 10 options: the original guesses index 6 for every question; lenient guesses 1 for question 70.
    expect(scoreOne(record(70, null, 'G', 6), 'original')).toEqual({ correct: true, guessed: true });
    expect(scoreOne(record(70, '', 'G', 6), 'tiger')).toEqual({ correct: true, guessed: true }); // `not pred`: "" too
    expect(scoreOne(record(70, null, 'B', 1), 'original')).toEqual({ correct: false, guessed: true });
    expect(scoreOne(record(70, null, 'B', 1), 'lenient')).toEqual({ correct: true, guessed: true });
    // no_random (run_no_random.py): no guess, so no letter is wrong even where the guess would have been right.
    expect(scoreOne(record(70, null, 'G', 6), 'no_random')).toEqual({ correct: false, guessed: false });
    expect(scoreOne(record(5, 'C'), 'no_random')).toEqual({ correct: true, guessed: false });
  });

  it('tallies raw counts and derives the rates from them', () => {
    const records = [record(1, 'C'), record(2, 'C'), record(3, 'A'), record(70, null, 'G', 6), record(0, null, 'A', 0)];
    const t = tally(records, 'original');
    expect(t).toEqual({ total: 5, correct: 3, random_guesses: 2, random_correct: 1, no_answer: 2 });
    expect(rates(t)).toEqual({ accuracy: 3 / 5, adjusted_accuracy: 2 / 3, unparsed_rate: 2 / 5 });
    const n = tally(records, 'no_random');
    expect(n).toEqual({ total: 5, correct: 2, random_guesses: 0, random_correct: 0, no_answer: 2 });
    expect(rates(tally([], 'original'))).toEqual({ accuracy: null, adjusted_accuracy: null, unparsed_rate: null });
  });

  it("writes <category>_summary.json in the original's shape and bytes, and run_no_random.py's", () => {
    const t = { total: 5, correct: 3, random_guesses: 2, random_correct: 1, no_answer: 2 };
    // json.dumps({...}, indent="\t") of the original's floats, written out by hand.
    expect(pythonJson(categorySummary('law', t, 'original'), true)).toBe(
      '{\n\t"law": {\n\t\t"corr": 3.0,\n\t\t"wrong": 2.0,\n\t\t"acc": 0.6\n\t},\n' +
        '\t"random": {\n\t\t"corr": 1.0,\n\t\t"wrong": 1.0\n\t},\n' +
        '\t"total": {\n\t\t"corr": 3.0,\n\t\t"wrong": 2.0,\n\t\t"acc": 0.6\n\t}\n}',
    );
    expect(
      categorySummary('law', { ...t, total: 2, correct: 0, random_guesses: 0, random_correct: 0 }, 'original'),
    ).toEqual({
      law: { corr: 0, wrong: 2, acc: 0 },
      random: { corr: 0, wrong: 0 },
      total: { corr: 0, wrong: 2, acc: 0 },
    });
    expect(categorySummary('law', { ...t, correct: 2, random_guesses: 0, random_correct: 0 }, 'no_random')).toEqual({
      law: { corr: 2, wrong: 3, no_answer: 2, acc: 0.4 },
      total: { corr: 2, wrong: 3, acc: 0.4, no_answer: 2 },
    });
    // A category without answers: the original's save_summary writes only the total.
    expect(categorySummary('law', EMPTY_TALLY, 'original')).toEqual({ total: { corr: 0, wrong: 0, acc: 0 } });
    expect(categorySummary('law', EMPTY_TALLY, 'no_random')).toEqual({
      total: { corr: 0, wrong: 0, acc: 0, no_answer: 0 },
    });
  });
});

describe("Python's rounding in the report", () => {
  it('rounds the exact binary value half to even, as f"{x:.2f}" (values from python3)', () => {
    // python3 -c "print(f'{97/800*100:.2f}', f'{0.125:.2f}', f'{0.375:.2f}', f'{2.675:.2f}', f'{12.5:.0f}', f'{13.5:.0f}', f'{51.04895:.2f}', f'{-0.004:.2f}')"
    expect([
      pythonFixed((97 / 800) * 100, 2),
      pythonFixed(0.125, 2),
      pythonFixed(0.375, 2),
      pythonFixed(2.675, 2),
      pythonFixed(12.5, 0),
      pythonFixed(13.5, 0),
    ]).toEqual(['12.12', '0.12', '0.38', '2.67', '12', '14']);
    expect(((97 / 800) * 100).toFixed(2)).toBe('12.13'); // why toFixed will not do
    expect([pythonFixed(0, 2), pythonFixed(100, 2), pythonFixed(51.04895, 2), pythonFixed(-0.004, 2)]).toEqual([
      '0.00',
      '100.00',
      '51.05',
      '-0.00',
    ]);
  });
});
