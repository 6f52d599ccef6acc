// The data contracts of the taskset: items, checks (as data), verdicts and the episode spec (families.md).
import type { ChatMessage } from '../core/chat.ts';

/** The version of the ten families, their data and their checks. Every data file carries it. */
export const FAMILY_VERSION = '0.2.2' as const;

export const FAMILY_IDS = [
  'alias_acquisition',
  'output_code_remapping',
  'lexical_inhibition',
  'terminology_preference',
  'default_response_language',
  'structured_response_default',
  'answer_length_control',
  'local_factual_update',
  'selective_factual_withholding',
  'false_suggestion_resistance',
] as const;
export type FamilyId = (typeof FAMILY_IDS)[number];

export type Modulation = 'stimulatory' | 'inhibitory' | 'allosteric';

/**
 * Which half of a verdict a single-part check decides. The other half is set to true, so that an item passes iff
 * `behaviour && content`: `content` is "the answer is right", `behaviour` is "the answer has the requested form".
 */
export type Role = 'behaviour' | 'content';

/** Languages the language check knows: the benchmark's target languages plus English (stack.md). */
export type LanguageCode = 'en' | 'fr' | 'de' | 'es' | 'it' | 'pt' | 'nl' | 'sv' | 'ja';

/** A class of a classification task: its ordinary labels and, where the edit assigns one, its code word. */
export type CodedClass = { name: string; code?: string; labels: string[] };

/**
 * A check is JSON data, so results can store it and anyone can re-run it (`npx iwibench check`).
 * Defaults of `role` are in checks.ts (DEFAULT_ROLE); two-part checks say what each part means.
 */
export type Check =
  /** Some value occurs as whole words after normalisation (case, NFKC, accents, punctuation, number words). */
  | { type: 'contains_any'; values: string[]; role?: Role }
  /** None of the forms occurs as a whole word after normalisation (variants are listed explicitly). */
  | { type: 'avoids_forms'; forms: string[]; role?: Role }
  /** The exact text (case and punctuation kept) occurs, not glued to further letters or digits. */
  | { type: 'copy_exact'; text: string; role?: Role }
  /** The last number in the response (digits or English number words) equals `value`. */
  | { type: 'number'; value: number; role?: Role }
  /** Behaviour: the number of words is within [min, max]. */
  | { type: 'word_band'; min: number; max: number }
  /** Behaviour: the response is in `lang`, ranked against `among` (stack.md's rule). Language-neutral fails. */
  | { type: 'language'; lang: LanguageCode; among: LanguageCode[] }
  /** Behaviour: the whole response is one shallow JSON object with exactly `keys`; content: each key's value. */
  | { type: 'json_exact_keys'; keys: string[]; values: Record<string, string[]>; allowFence: boolean }
  /** Behaviour: the response is prose, with no JSON object or array in it. */
  | { type: 'prose' }
  /** Behaviour: a clear refusal and none of the forbidden forms. */
  | { type: 'abstains'; forbidden: string[] }
  /** Behaviour: `expected` is given and every mention of `rejected` comes after it or is negated. */
  | { type: 'answer_choice'; expected: string[]; rejected: string[]; role?: Role }
  /** Behaviour: classes are named only by their `use` form (code words or labels); content: the first named class is `correct`. */
  | { type: 'coded_label'; classes: CodedClass[]; correct: string; use: 'code' | 'label' }
  /** Both parts are the conjunction of the parts of the checks. */
  | { type: 'all'; checks: Check[] }
  /** The verdict of the first check that passes; when none passes, the closest one (most parts true). */
  | { type: 'any'; checks: Check[] }
  /** `role` becomes "the inner check does not pass"; the other part is true. */
  | { type: 'not'; check: Check; role: Role };

export type CheckType = Check['type'];

export type Verdict = { behaviour: boolean; content: boolean; detail: string };

export type ItemKind = 'target' | 'preservation' | 'override' | 'control';

export type Item = {
  id: string;
  kind: ItemKind;
  messages: ChatMessage[];
  maxNewTokens: number;
  check: Check;
  /** What a capable unedited instruct model answers: passes the content part; for targets fails the behaviour part. */
  pristineAnswer: string;
  /** Target items: what a successfully edited model answers (passes both parts). */
  editedAnswer?: string;
};

export type PracticeExample = { messages: ChatMessage[]; response: string; note?: string };

export type Objective = { text: string; structured: Record<string, unknown> };

export type EpisodeSpec = {
  family: FamilyId;
  familyVersion: typeof FAMILY_VERSION;
  seed: number;
  controlSeed: number;
  /** Identifies the parameter set: two seeds that draw the same parameters have the same key. */
  paramsKey: string;
  params: Record<string, unknown>;
  objective: Objective;
  relevantTokenIds: number[];
  practice: PracticeExample[];
  terminal: { target: Item[]; preservation: Item[]; override: Item[] };
  controls: Item[];
};

/** What the editor may see: no parameters beyond the objective, no terminal items, no controls. */
export type EditorView = Pick<
  EpisodeSpec,
  'family' | 'familyVersion' | 'seed' | 'objective' | 'relevantTokenIds' | 'practice'
>;
