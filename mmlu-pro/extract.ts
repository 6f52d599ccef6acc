// Answer extraction, one function per scoring profile (score.ts SCORING_PROFILES). All three keep the reference's
// three rules in order: (1) "answer is (X)", (2) "Answer: X" (the reference's greedy `.*[aA]nswer:…` without dot-all:
// the last match on the first line that has one), (3) the last standalone capital A–J anywhere; else null.
//
// - original: OAI-API-MMLU-Pro's rules, case as they are (capital letters only), with the language's own phrases
//   (languages.ts). The fixes its README lists (square brackets like round ones, words inside the brackets ignored)
//   are tried only where the rule they fix found nothing.
// - tiger: TIGER-Lab evaluate_from_api.py: English phrases, rule 2 without brackets.
// - lenient: this project's refinements: rule 1 case-insensitive inside brackets, brackets of either kind, a letter
//   glued to a word is not an answer; English phrases in every language.
//
// Python's `re` on str decides what a word character (\b, \w) and a space (\s) are: Unicode letters, digits and "_";
// Unicode whitespace including \x1c-\x1f. The classes below spell that out, since JavaScript's differ.
import { LANGUAGES, type LanguageCode } from './languages.ts';
import type { ScoringProfile } from './score.ts';

const WORD = '[\\p{L}\\p{N}_]';
const NOT_WORD_BEFORE = `(?<!${WORD})`;
const NOT_WORD_AFTER = `(?!${WORD})`;
const PY_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const OPEN = '[([（［]';
const CLOSE = '[)\\]）］]';
const INSIDE = '[^()\\[\\]（）［］\\n]*';

/** The predicted letter A–J under `profile`, or null (scored as a random guess). */
export function extractAnswer(text: string, profile: ScoringProfile, language: LanguageCode): string | null {
  switch (profile) {
    case 'original':
      return extractOriginal(text, language);
    case 'tiger':
      return extractTiger(text);
    case 'lenient':
      return extractLenient(text);
  }
}

// --- original -------------------------------------------------------------------------------------------------------
type Rules = { answerIs: RegExp; answerIsBracket: RegExp; answerColon: RegExp; answerColonBracket: RegExp };
const originalRules = new Map<LanguageCode, Rules>();

function rulesFor(language: LanguageCode): Rules {
  let rules = originalRules.get(language);
  if (!rules) {
    const { answerIs, answerIsEnd, answerLabel } = LANGUAGES[language];
    rules = {
      answerIs: new RegExp(`${answerIs} \\(?([A-J])\\)?${answerIsEnd}`, 'u'),
      answerIsBracket: new RegExp(`${answerIs}${PY_SPACE}*${OPEN}(${INSIDE})${CLOSE}`, 'gu'),
      answerColon: new RegExp(`${answerLabel}:${PY_SPACE}*\\(?([A-J])`, 'gu'),
      answerColonBracket: new RegExp(`${answerLabel}:${PY_SPACE}*${OPEN}(${INSIDE})${CLOSE}`, 'gu'),
    };
    originalRules.set(language, rules);
  }
  return rules;
}

function extractOriginal(text: string, language: LanguageCode): string | null {
  const rules = rulesFor(language);
  return (
    rules.answerIs.exec(text)?.[1] ??
    firstLetterInBrackets(rules.answerIsBracket, text) ??
    lastOnFirstLine(rules.answerColon, text, (m) => m[1]!) ??
    lastOnFirstLine(rules.answerColonBracket, text, (m) => standaloneLetter(m[1]!)) ??
    lastStandaloneCapital(text)
  );
}

/** The fork's fix: "answer is [B]", "answer is (Option B)", "answer is [C. Paris]": the first standalone capital inside. */
function firstLetterInBrackets(pattern: RegExp, text: string): string | null {
  for (const match of text.matchAll(pattern)) {
    const letter = standaloneLetter(match[1]!);
    if (letter) return letter;
  }
  return null;
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

function standaloneLetter(text: string): string | null {
  return new RegExp(`${NOT_WORD_BEFORE}[A-J]${NOT_WORD_AFTER}`, 'u').exec(text)?.[0] ?? null;
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
  for (const match of text.matchAll(pattern)) {
    const found = letterOf(match);
    if (found === null) continue;
    const lineStart = text.lastIndexOf('\n', match.index - 1);
    if (letter !== null && lineStart !== line) break;
    line = lineStart;
    letter = found;
  }
  return letter;
}
