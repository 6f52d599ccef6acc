// Answer extraction of TIGER-Lab's evaluate_from_api.py (extract_answer → extract_again → extract_final), with the
// fixes of mmlu-pro.md "Scoring": the first rule is case-insensitive, square brackets count like round ones, and
// whatever follows the letter inside the brackets is ignored.
//
// One refinement keeps case-insensitivity from creating wrong answers: a lower-case letter counts only inside
// brackets ("the answer is (b)"), so "the answer is a function of x … the answer is (C)" still gives C, as the
// case-sensitive original did. A letter glued to a word ("Answer: Based on …") is not an answer.
//
// Word boundaries follow Python's `re` on str (Unicode letters and digits are word characters), so a letter inside
// Japanese or Chinese text is treated as the reference treats it.

const NOT_WORD_BEFORE = '(?<![\\p{L}\\p{N}_])';
const NOT_WORD_AFTER = '(?![\\p{L}\\p{N}_])';

/**
 * Rule 1: "answer is (B)", "answer is [b]", "The Answer Is B", "answer is (B) Paris", "answer is [C. Paris]".
 * The `i` flag also lets the bare letter match lower case; `firstAnswerIs` skips those matches.
 */
const ANSWER_IS = new RegExp(`answer is (?:[([]([A-J])|([A-J]))${NOT_WORD_AFTER}`, 'giu');
/**
 * Rule 2, the reference's `.*[aA]nswer:\s*\(?([A-J])\)?`: its greedy `.*` (no dot-all) picks the last
 * "Answer: X" on the first line that has one. Found here by one linear scan instead of backtracking.
 */
const ANSWER_COLON = new RegExp(`[aA]nswer:\\s*[([]?([A-J])${NOT_WORD_AFTER}`, 'gu');
/** Rule 3: the last standalone capital A–J anywhere in the text. */
const STANDALONE_LETTER = new RegExp(`${NOT_WORD_BEFORE}[A-J]${NOT_WORD_AFTER}`, 'gu');

/** The predicted letter A–J, or null when none of the three rules finds one (scored as a random guess). */
export function extractAnswer(text: string): string | null {
  const first = firstAnswerIs(text);
  if (first) return first;
  const second = lastAnswerColonOnFirstLine(text);
  if (second) return second;
  let last: string | null = null;
  for (const match of text.matchAll(STANDALONE_LETTER)) last = match[0];
  return last;
}

function firstAnswerIs(text: string): string | null {
  for (const match of text.matchAll(ANSWER_IS)) {
    const bracketed = match[1];
    if (bracketed) return bracketed.toUpperCase();
    const bare = match[2]!;
    if (bare >= 'A' && bare <= 'J') return bare;
  }
  return null;
}

function lastAnswerColonOnFirstLine(text: string): string | null {
  let line = -1;
  let letter: string | null = null;
  for (const match of text.matchAll(ANSWER_COLON)) {
    const lineStart = text.lastIndexOf('\n', match.index - 1);
    if (letter !== null && lineStart !== line) break;
    line = lineStart;
    letter = match[1]!;
  }
  return letter;
}
