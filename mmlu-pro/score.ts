// Scoring of the original's update_result/save_summary: an extracted letter is right when it equals `answer`; an
// unextracted one (no letter) is a random guess, right when the guessed index equals `answer_index`. The overall
// score is all correct over all attempts, random guesses included. Counts stay integers; ratios are derived from them.
// no_random is the fork's later run_no_random.py: no guess, an unextracted answer is wrong and counted as "no answer".
import { CPythonRandom } from './cpython-random.ts';

/**
 * How answers are read and guessed (mmlu-pro/README.md "Scoring"):
 * - original: OAI-API-MMLU-Pro exactly: its extraction per language, `random.seed(12345)` then
 *   `random.randint(0, len(options) - 1)` before every guess (so every question with n options gets the same guess);
 * - no_random: the same extraction, no guess (the fork's run_no_random.py at its HEAD, 3bd82c4);
 * - tiger: TIGER-Lab's evaluate_from_api.py extraction (English), the original's guess;
 * - lenient: this project's refined extraction (extract.ts) and a guess seeded per question.
 */
export const SCORING_PROFILES = ['original', 'no_random', 'tiger', 'lenient'] as const;
export type ScoringProfile = (typeof SCORING_PROFILES)[number];

export function isScoringProfile(value: unknown): value is ScoringProfile {
  return (SCORING_PROFILES as readonly unknown[]).includes(value);
}

/** The seed the original passes to `random.seed` before every guess. */
export const GUESS_SEED = 12345;

/** The original's guess for a question with `optionCount` options: CPython's `randint(0, n - 1)` after `seed(12345)`. */
export function originalGuess(optionCount: number): number {
  return new CPythonRandom(GUESS_SEED).randint(0, optionCount - 1);
}

/** The guessed option index for one question under `profile`. */
export function guessIndex(profile: ScoringProfile, questionId: number, optionCount: number): number {
  return profile === 'lenient'
    ? Math.floor(mulberry32((GUESS_SEED + questionId) >>> 0) * optionCount)
    : originalGuess(optionCount);
}

/** First output of mulberry32 (Tommy Ettinger's 32-bit generator) for `seed`, in [0, 1). */
export function mulberry32(seed: number): number {
  let t = (seed + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** The fields scoring reads from a result record. */
export type Scorable = {
  question_id: number;
  options: string[];
  answer: string;
  answer_index: number;
  pred: string | null;
};

export type Outcome = { correct: boolean; guessed: boolean };

/** The original's `if not each["pred"]`: null and "" are both guesses (under no_random: wrong, no guess). */
export function scoreOne(record: Scorable, profile: ScoringProfile): Outcome {
  if (!record.pred) {
    if (profile === 'no_random') return { correct: false, guessed: false };
    return {
      correct: guessIndex(profile, record.question_id, record.options.length) === record.answer_index,
      guessed: true,
    };
  }
  return { correct: record.pred === record.answer, guessed: false };
}

/** Raw counts of one category or of several together. `no_answer`: no letter extracted (guessed or not). */
export type Tally = {
  total: number;
  correct: number;
  random_guesses: number;
  random_correct: number;
  no_answer: number;
};

export const EMPTY_TALLY: Tally = { total: 0, correct: 0, random_guesses: 0, random_correct: 0, no_answer: 0 };

export function tally(records: Iterable<Scorable>, profile: ScoringProfile): Tally {
  const t = { ...EMPTY_TALLY };
  for (const record of records) {
    const { correct, guessed } = scoreOne(record, profile);
    t.total += 1;
    if (!record.pred) t.no_answer += 1;
    if (correct) t.correct += 1;
    if (guessed) t.random_guesses += 1;
    if (guessed && correct) t.random_correct += 1;
  }
  return t;
}

export function addTallies(tallies: Iterable<Tally>): Tally {
  const sum = { ...EMPTY_TALLY };
  for (const t of tallies) {
    sum.total += t.total;
    sum.correct += t.correct;
    sum.random_guesses += t.random_guesses;
    sum.random_correct += t.random_correct;
    sum.no_answer += t.no_answer;
  }
  return sum;
}

/** Ratios in [0, 1], null when the denominator is 0. `adjusted` leaves the random guesses out entirely. */
export type Rates = { accuracy: number | null; adjusted_accuracy: number | null; unparsed_rate: number | null };

export function rates(t: Tally): Rates {
  const ratio = (a: number, b: number) => (b === 0 ? null : a / b);
  return {
    accuracy: ratio(t.correct, t.total),
    adjusted_accuracy: ratio(t.correct - t.random_correct, t.total - t.random_guesses),
    unparsed_rate: ratio(t.no_answer, t.total),
  };
}

/** `<category>_summary.json`'s numbers: Python floats in the file (python.ts pythonJson). */
export type CategorySummary = Record<string, Record<string, number>>;

/**
 * `<category>_summary.json` as the original writes it (save_summary): `{category: {corr, wrong, acc}, random: {corr,
 * wrong}, total: {corr, wrong, acc}}`, "random" only when the category has answers, acc 0 where nothing is right;
 * under no_random as run_no_random.py: `{category: {corr, wrong, no_answer, acc}, total: {corr, wrong, acc, no_answer}}`.
 */
export function categorySummary(category: string, t: Tally, profile: ScoringProfile): CategorySummary {
  const wrong = t.total - t.correct;
  const acc = t.correct > 0 ? t.correct / t.total : 0;
  if (profile === 'no_random') {
    const total = { corr: t.correct, wrong, acc, no_answer: t.no_answer };
    if (t.total === 0) return { total };
    return { [category]: { corr: t.correct, wrong, no_answer: t.no_answer, acc }, total };
  }
  if (t.total === 0) return { total: { corr: 0, wrong: 0, acc: 0 } };
  return {
    [category]: { corr: t.correct, wrong, acc },
    random: { corr: t.random_correct, wrong: t.random_guesses - t.random_correct },
    total: { corr: t.correct, wrong, acc },
  };
}
