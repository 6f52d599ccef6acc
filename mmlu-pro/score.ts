// Scoring of the reference's update_result/save_summary: an extracted letter is right when it equals `answer`; an
// unextracted one is a random guess, right when the guessed index equals `answer_index`. The overall score is all
// correct over all attempts, random guesses included. Counts stay integers; ratios are derived from them.

/** The reference seeds Python's `random` with 12345 before every guess; we keep the number as the base seed. */
export const GUESS_SEED = 12345;

/**
 * The random guess for one question: `floor(mulberry32(12345 + question_id)() * options)`. Deterministic per
 * question, and independent of run order, parallelism and resumes. (The reference reseeds with the same 12345 before
 * each guess, so every unparsed question with the same option count gets the same guess.)
 */
export function guessIndex(questionId: number, optionCount: number): number {
  return Math.floor(mulberry32((GUESS_SEED + questionId) >>> 0) * optionCount);
}

/** First output of mulberry32 (Tommy Ettinger's 32-bit generator) for `seed`, in [0, 1). */
export function mulberry32(seed: number): number {
  let t = (seed + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** The fields scoring reads from a result record. */
export type Scorable = { question_id: number; options: string[]; answer: string; answer_index: number; pred: string | null };

export type Outcome = { correct: boolean; guessed: boolean };

export function scoreOne(record: Scorable): Outcome {
  if (record.pred === null) {
    return { correct: guessIndex(record.question_id, record.options.length) === record.answer_index, guessed: true };
  }
  return { correct: record.pred === record.answer, guessed: false };
}

/** Raw counts of one category or of several together. */
export type Tally = { total: number; correct: number; random_guesses: number; random_correct: number };

export const EMPTY_TALLY: Tally = { total: 0, correct: 0, random_guesses: 0, random_correct: 0 };

export function tally(records: Iterable<Scorable>): Tally {
  const t = { ...EMPTY_TALLY };
  for (const record of records) {
    const { correct, guessed } = scoreOne(record);
    t.total += 1;
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
    unparsed_rate: ratio(t.random_guesses, t.total),
  };
}
