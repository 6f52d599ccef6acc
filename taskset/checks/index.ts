// Public surface of the checks: run a check (data) on a response, and the pieces reports and tests need.
export { runCheck, passes, DEFAULT_ROLE, REFUSAL_PATTERNS, NEGATION_CUES } from './checks.ts';
export { identifyLanguage, strippedForLanguage, LANGUAGES, LANGUAGE_NAMES, MIN_DETECTOR_LETTERS } from './language.ts';
export type { LanguageIdentification } from './language.ts';
export { normalise, containsTerm, countWords, numbersIn } from './normalise.ts';
export { checkParts } from './parts.ts';
