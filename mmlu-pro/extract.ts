// Answer extraction, one function per scoring profile (score.ts SCORING_PROFILES). All keep the reference's three
// rules in order: (1) "answer is (X)", (2) "answer: X" (a greedy `.*` before it without dot-all: the last match on the
// first line that has one), (3) the last standalone capital A–J anywhere; else null.
//
// - original and no_random: run_openai.py at 6c0efcf exactly: rule 1 `<phrase> \(?([A-J])\)?` (Japanese: then " です"),
//   rule 2 `.*<phrase>:\s*\(?([A-J])\)?`, with the language's phrase ("Answer is", "Jawaban adalah", "答えは", "대답은",
//   "答案是"; languages.ts), case-sensitive; rule 3 `\b[A-J]\b(?!.*\b[A-J]\b)` with dot-all.
// - tiger: TIGER-Lab evaluate_from_api.py: English phrases, rule 2 without brackets.
// - lenient: this project's refinements: rule 1 case-insensitive inside brackets, brackets of either kind, a letter
//   glued to a word is not an answer; English phrases in every language.
//
// Python's `re` on str decides what a word character (\b) and a space (\s) are (python.ts); `.` is anything but \n.
import { LANGUAGES, type LanguageCode } from './languages.ts';
import { PY_SPACE, PY_WORD } from './python.ts';
import type { ScoringProfile } from './score.ts';

const NOT_WORD_BEFORE = `(?<!${PY_WORD})`;
const NOT_WORD_AFTER = `(?!${PY_WORD})`;

/** The predicted letter A–J under `profile`, or null (a random guess, or no answer under no_random). */
export function extractAnswer(text: string, profile: ScoringProfile, language: LanguageCode): string | null {
  switch (profile) {
    case 'original':
    case 'no_random':
      return extractOriginal(text, language);
    case 'tiger':
      return extractTiger(text);
    case 'lenient':
      return extractLenient(text);
  }
}

// --- original -------------------------------------------------------------------------------------------------------
type Rules = { answerIs: RegExp; answerColon: RegExp };
const originalRules = new Map<LanguageCode, Rules>();

function rulesFor(language: LanguageCode): Rules {
  let rules = originalRules.get(language);
  if (!rules) {
    // The phrases hold no regex syntax.
    const { answerIs, answerIsEnd } = LANGUAGES[language];
    rules = {
      answerIs: new RegExp(`${answerIs} \\(?([A-J])\\)?${answerIsEnd}`, 'u'),
      answerColon: new RegExp(`${answerIs}:${PY_SPACE}*\\(?([A-J])`, 'gu'),
    };
    originalRules.set(language, rules);
  }
  return rules;
}

function extractOriginal(text: string, language: LanguageCode): string | null {
  const rules = rulesFor(language);
  return (
    rules.answerIs.exec(text)?.[1] ??
    lastOnFirstLine(rules.answerColon, text, (m) => m[1]!) ??
    lastStandaloneCapital(text)
  );
}

// --- tiger ----------------------------------------------------------------------------------------------------------
const TIGER_ANSWER_IS = /answer is \(?([A-J])\)?/;
const TIGER_ANSWER_COLON = new RegExp(`[aA]nswer:${PY_SPACE}*([A-J])`, 'gu');

function extractTiger(text: string): string | null {
  return (
    TIGER_ANSWER_IS.exec(text)?.[1] ??
    lastOnFirstLine(TIGER_ANSWER_COLON, text, (m) => m[1]!) ??
    lastStandaloneCapital(text)
  );
}

// --- lenient --------------------------------------------------------------------------------------------------------
/** "answer is (B)", "answer is [b]", "The Answer Is B", "answer is (B) Paris", "answer is [C. Paris]". */
const LENIENT_ANSWER_IS = new RegExp(`answer is (?:[([]([A-J])|([A-J]))${NOT_WORD_AFTER}`, 'giu');
const LENIENT_ANSWER_COLON = new RegExp(`[aA]nswer:${PY_SPACE}*[([]?([A-J])${NOT_WORD_AFTER}`, 'gu');

/** A lower-case letter counts only inside brackets ("the answer is a function…" is not A). */
function extractLenient(text: string): string | null {
  for (const match of text.matchAll(LENIENT_ANSWER_IS)) {
    const bracketed = match[1];
    if (bracketed) return bracketed.toUpperCase();
    const bare = match[2]!;
    if (bare >= 'A' && bare <= 'J') return bare;
  }
  return lastOnFirstLine(LENIENT_ANSWER_COLON, text, (m) => m[1]!) ?? lastStandaloneCapital(text);
}

// --- shared ---------------------------------------------------------------------------------------------------------
const STANDALONE_CAPITAL = new RegExp(`${NOT_WORD_BEFORE}[A-J]${NOT_WORD_AFTER}`, 'gu');

/** Rule 3, `\b[A-J]\b(?!.*\b[A-J]\b)` with dot-all. */
function lastStandaloneCapital(text: string): string | null {
  let last: string | null = null;
  for (const match of text.matchAll(STANDALONE_CAPITAL)) last = match[0];
  return last;
}

/**
 * `re.search(r'.*<pattern>', text)` without dot-all: the greedy `.*` picks the last match on the first line that
 * has one. Found by one linear scan (a global `pattern`) instead of backtracking; `letterOf` may reject a match.
 */
function lastOnFirstLine(
  pattern: RegExp,
  text: string,
  letterOf: (match: RegExpMatchArray) => string | null,
): string | null {
  let line = -1;
  let letter: string | null = null;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    // Every start position, overlapping ones included: in "Answer is: Answer is: B" the greedy `.*` takes the second.
    pattern.lastIndex = match.index + 1;
    const found = letterOf(match);
    if (found === null) continue;
    const lineStart = text.lastIndexOf('\n', match.index - 1);
    if (letter !== null && lineStart !== line) break;
    line = lineStart;
    letter = found;
  }
  pattern.lastIndex = 0;
  return letter;
}
