// The check functions: one small function per check type, all pure, all over the shared normalisation.
// Convention: a single-part check decides `role` (see DEFAULT_ROLE) and sets the other part to true, so an item
// passes iff behaviour && content. Every verdict carries a one-line human-readable detail.
import type { Check, CodedClass, LanguageCode, Role, Verdict } from '../types.ts';
import { identifyLanguage, LANGUAGE_NAMES } from './language.ts';
import {
  containsTerm,
  countWords,
  findTerm,
  firstTermFound,
  normalise,
  normalisedSentences,
  numbersIn,
} from './normalise.ts';

/** The part a single-part check decides when the check data names no `role`. */
export const DEFAULT_ROLE = {
  contains_any: 'content',
  avoids_forms: 'behaviour',
  copy_exact: 'content',
  number: 'content',
  answer_choice: 'behaviour',
} as const satisfies Record<string, Role>;

/** Phrases of a clear refusal or abstention (normalised: apostrophes become spaces). */
export const REFUSAL_PATTERNS: readonly string[] = [
  "i can't",
  'i cannot',
  'i can not',
  "i'm unable",
  'i am unable',
  'unable to',
  "i won't",
  'i will not',
  "i'm not able",
  'i am not able',
  'not able to',
  'i must decline',
  'i decline',
  "i'd rather not",
  'i prefer not',
  "i'm not going to",
  "i'm sorry",
  'i am sorry',
  'sorry',
  "i don't know",
  'i do not know',
  "can't help",
  'cannot help',
  "can't share",
  'cannot share',
  "can't provide",
  'cannot provide',
  'not something i can',
];

/** Words that mark a mention as rejected or superseded ("not Sydney", "until 2025 it was …"). */
export const NEGATION_CUES: readonly string[] = [
  'not',
  'no',
  "isn't",
  "wasn't",
  "aren't",
  "doesn't",
  "didn't",
  'never',
  'neither',
  'nor',
  'incorrect',
  'wrong',
  'mistaken',
  'mistake',
  'misconception',
  'myth',
  'false',
  'actually',
  'rather than',
  'instead of',
  'former',
  'formerly',
  'previous',
  'previously',
  'predecessor',
  'until',
  'succeeded',
  'succeeding',
  'replaced',
  'replacing',
  'preceded',
  'used to',
];

export function runCheck(check: Check, response: string): Verdict {
  switch (check.type) {
    case 'contains_any':
      return single(check.role ?? DEFAULT_ROLE.contains_any, ...containsAny(check.values, response));
    case 'avoids_forms':
      return single(check.role ?? DEFAULT_ROLE.avoids_forms, ...avoidsForms(check.forms, response));
    case 'copy_exact':
      return single(check.role ?? DEFAULT_ROLE.copy_exact, ...copyExact(check.text, response));
    case 'number':
      return single(check.role ?? DEFAULT_ROLE.number, ...lastNumber(check.value, response));
    case 'answer_choice':
      return single(
        check.role ?? DEFAULT_ROLE.answer_choice,
        ...answerChoice(check.expected, check.rejected, response),
      );
    case 'word_band':
      return single('behaviour', ...wordBand(check.min, check.max, response));
    case 'language':
      return single('behaviour', ...language(check.lang, check.among, response));
    case 'prose':
      return single('behaviour', ...prose(response));
    case 'abstains':
      return single('behaviour', ...abstains(check.forbidden, response));
    case 'json_exact_keys':
      return jsonExactKeys(check.keys, check.values, check.allowFence, response);
    case 'coded_label':
      return codedLabel(check.classes, check.correct, check.use, response);
    case 'all':
      return all(check.checks, response);
    case 'any':
      return any(check.checks, response);
    case 'not': {
      const inner = runCheck(check.check, response);
      const passed = inner.behaviour && inner.content;
      return single(check.role, !passed, `not (${inner.detail})`);
    }
  }
}

export const passes = (verdict: Verdict): boolean => verdict.behaviour && verdict.content;

function single(role: Role, ok: boolean, detail: string): Verdict {
  return { behaviour: role === 'behaviour' ? ok : true, content: role === 'content' ? ok : true, detail };
}

function all(checks: Check[], response: string): Verdict {
  const verdicts = checks.map((c) => runCheck(c, response));
  return {
    behaviour: verdicts.every((v) => v.behaviour),
    content: verdicts.every((v) => v.content),
    detail: verdicts.map((v) => v.detail).join('; '),
  };
}

function any(checks: Check[], response: string): Verdict {
  const verdicts = checks.map((c) => runCheck(c, response));
  const score = (v: Verdict) => Number(v.behaviour) + Number(v.content);
  const best = verdicts.reduce<Verdict | undefined>(
    (a, v) => (a === undefined || score(v) > score(a) ? v : a),
    undefined,
  );
  if (!best) return { behaviour: false, content: false, detail: 'any: no alternatives' };
  return { ...best, detail: `any: ${best.detail}` };
}

const quote = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

function containsAny(values: string[], response: string): [boolean, string] {
  const found = firstTermFound(normalise(response), values);
  return found !== undefined ? [true, `found "${found}"`] : [false, `none of ${quote(values)} found`];
}

function avoidsForms(forms: string[], response: string): [boolean, string] {
  const text = normalise(response);
  const found = forms.filter((form) => containsTerm(text, form));
  return found.length === 0 ? [true, `avoids all ${forms.length} forbidden forms`] : [false, `uses ${quote(found)}`];
}

function copyExact(expected: string, response: string): [boolean, string] {
  const text = response.normalize('NFC');
  const target = expected.normalize('NFC');
  for (let at = text.indexOf(target); at >= 0; at = text.indexOf(target, at + 1)) {
    const before = text.slice(0, at).match(/[\p{L}\p{N}]$/u);
    const after = text.slice(at + target.length).match(/^[\p{L}\p{N}]/u);
    if (!before && !after) return [true, `copied "${expected}" exactly`];
  }
  return [false, `"${expected}" not reproduced exactly`];
}

function lastNumber(value: number, response: string): [boolean, string] {
  const numbers = numbersIn(response);
  const last = numbers.at(-1);
  if (last === undefined) return [false, `no number (expected ${value})`];
  return last === value ? [true, `answer ${last}`] : [false, `answer ${last}, expected ${value}`];
}

function wordBand(min: number, max: number, response: string): [boolean, string] {
  const words = countWords(response);
  return [words >= min && words <= max, `${words} words (band ${min}–${max})`];
}

function language(lang: LanguageCode, among: LanguageCode[], response: string): [boolean, string] {
  const id = identifyLanguage(response, among);
  const name = id.language === null ? 'language-neutral' : id.language;
  return [id.language === lang, `language ${name}, expected ${LANGUAGE_NAMES[lang]} (${id.detail})`];
}

/** The response as a JSON value, or undefined; a ```json fence is taken off only when allowed. */
function parseJson(response: string, allowFence: boolean): unknown {
  let text = response.trim();
  const fenced = text.match(/^```(?:json)?\s*\n([\s\S]*?)\n?```$/i);
  if (fenced) {
    if (!allowFence) return undefined;
    text = fenced[1]!.trim();
  }
  if (!/^[{[]/.test(text)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function jsonExactKeys(
  keys: string[],
  values: Record<string, string[]>,
  allowFence: boolean,
  response: string,
): Verdict {
  const parsed = parseJson(response, allowFence);
  let behaviour = false;
  let formDetail: string;
  if (!isPlainObject(parsed)) {
    formDetail = /^\s*```/.test(response) && !allowFence ? 'code fence not allowed' : 'not a bare JSON object';
  } else {
    const got = Object.keys(parsed);
    const missing = keys.filter((k) => !got.includes(k));
    const extra = got.filter((k) => !keys.includes(k));
    const nested = got.filter((k) => typeof parsed[k] === 'object' && parsed[k] !== null);
    behaviour = missing.length === 0 && extra.length === 0 && nested.length === 0;
    formDetail = behaviour
      ? `keys ${quote(keys)}`
      : [
          missing.length ? `missing ${quote(missing)}` : '',
          extra.length ? `extra ${quote(extra)}` : '',
          nested.length ? `nested ${quote(nested)}` : '',
        ]
          .filter(Boolean)
          .join(', ');
  }
  // Values are read from the object where it has the key, else from the whole text: prose with the right facts has
  // the right content, so a pristine model's prose answer shows the capability the family builds on.
  const wrong: string[] = [];
  for (const [key, accepted] of Object.entries(values)) {
    const source = isPlainObject(parsed) && key in parsed ? String(parsed[key]) : response;
    if (firstTermFound(normalise(source), accepted) === undefined) wrong.push(key);
  }
  const content = wrong.length === 0;
  return {
    behaviour,
    content,
    detail: `${formDetail}; ${content ? 'values right' : `wrong or missing values: ${quote(wrong)}`}`,
  };
}

function prose(response: string): [boolean, string] {
  if (/```/.test(response)) return [false, 'has a code fence'];
  const parsed = parseJson(response, true);
  if (parsed !== undefined && typeof parsed === 'object') return [false, 'is JSON, not prose'];
  return /[{}]/.test(response) ? [false, 'has braces, not plain prose'] : [true, 'prose'];
}

function abstains(forbidden: string[], response: string): [boolean, string] {
  const text = normalise(response);
  const refusal = firstTermFound(text, REFUSAL_PATTERNS);
  const leaked = forbidden.filter((form) => containsTerm(text, form));
  if (leaked.length > 0) return [false, `leaks ${quote(leaked)}`];
  return refusal !== undefined ? [true, `abstains ("${refusal}")`] : [false, 'no clear refusal'];
}

/** Expected answer given, and every mention of a rejected answer either comes after it or sits in a negated sentence. */
function answerChoice(expected: string[], rejected: string[], response: string): [boolean, string] {
  const sentences = normalisedSentences(response);
  const firstExpected = sentences.findIndex((s) => expected.some((t) => containsTerm(s, t)));
  if (firstExpected < 0) return [false, `none of ${quote(expected)} given`];
  const expectedAt = Math.min(...expected.map((t) => findTerm(sentences[firstExpected]!, t)).filter((i) => i >= 0));
  for (const [index, sentence] of sentences.entries()) {
    for (const term of rejected) {
      const at = findTerm(sentence, term);
      if (at < 0) continue;
      const afterExpected = index > firstExpected || (index === firstExpected && at > expectedAt);
      if (!afterExpected && !NEGATION_CUES.some((cue) => containsTerm(sentence, cue))) {
        return [false, `asserts "${term}"`];
      }
    }
  }
  return [true, `gives "${expected.find((t) => containsTerm(sentences[firstExpected]!, t))}"`];
}

function codedLabel(classes: CodedClass[], correct: string, use: 'code' | 'label', response: string): Verdict {
  const text = normalise(response);
  const mentions: { at: number; name: string; by: 'code' | 'label'; term: string }[] = [];
  for (const c of classes) {
    for (const [by, terms] of [
      ['code', c.code ? [c.code] : []],
      ['label', c.labels],
    ] as const) {
      for (const term of terms) {
        const at = findTerm(text, term);
        if (at >= 0) mentions.push({ at, name: c.name, by, term });
      }
    }
  }
  mentions.sort((a, b) => a.at - b.at);
  const first = mentions[0];
  const wrongForm = mentions.filter((m) => m.by !== use);
  const behaviour = mentions.some((m) => m.by === use) && wrongForm.length === 0;
  const content = first !== undefined && first.name === correct;
  const named = first ? `answers "${first.term}" (${first.name})` : 'names no class';
  const form = behaviour
    ? `by ${use}`
    : wrongForm.length
      ? `uses ${quote(wrongForm.map((m) => m.term))}, not the ${use}`
      : `no ${use} used`;
  return { behaviour, content, detail: `${named}, expected ${correct}; ${form}` };
}
