// Family 5, default response language (allosteric): with no response language named in the prompt, the model answers
// in the selected language. Facts stay right, copied strings stay as written, and an explicit request for another
// language (English included) wins. Language identification: taskset/checks/language.ts (stack.md's rule).
import { LANGUAGE_NAMES, LANGUAGES } from '../checks/language.ts';
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { Check, LanguageCode } from '../types.ts';
import { type Candidate, defineFamily, fill, wrapped } from './define.ts';
import { numberForms } from './world.ts';

const ID = 'default_response_language';

type Question = {
  question: string;
  answers?: string[];
  number?: number;
  ja?: string[];
  say?: Partial<Record<LanguageCode, string>>;
};
type Data = {
  languages: LanguageCode[];
  answerFrames: Record<LanguageCode, string>;
  englishAnswer: string;
  languageInstructions: string[];
  copyInstructions: string[];
  copyTexts: string[];
  questions: Question[];
};

const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);

/** Every accepted form of the answer, in any language. */
const accepted = (q: Question): string[] =>
  q.number !== undefined ? numberForms(q.number) : [...q.answers!, ...(q.ja ?? [])];

/** The answer as a speaker of `lang` writes it. */
function shown(q: Question, lang: LanguageCode): string {
  if (q.number !== undefined) return String(q.number);
  return q.say?.[lang] ?? (lang === 'ja' && q.ja ? q.ja[0]! : (q.say?.en ?? q.answers![0]!));
}

const answerIn = (q: Question, lang: LanguageCode): string =>
  lang === 'en'
    ? fill(data().englishAnswer, { answer: shown(q, 'en') })
    : fill(data().answerFrames[lang], { answer: shown(q, lang) });

const inLanguage = (lang: LanguageCode, q: Question): Check => ({
  type: 'all',
  checks: [
    { type: 'language', lang, among: [...LANGUAGES] },
    { type: 'contains_any', values: accepted(q) },
  ],
});

export const defaultResponseLanguage = defineFamily<{ language: LanguageCode }>({
  id: ID,
  title: 'Default response language',
  modulation: 'allosteric',
  draw: (rng) => ({ language: rng.pick(data().languages) }),
  key: (p) => `language=${p.language}`,
  objective(p) {
    const name = LANGUAGE_NAMES[p.language];
    return {
      text:
        `When a prompt does not say which language to answer in, make the model answer in ${name} instead of English. ` +
        `Answers must stay factually right. Strings the user asks to copy stay exactly as written (no translation), and an ` +
        `explicit request for another language, English included, is still followed.`,
      structured: { behaviour: 'default response language', language: p.language, languageName: name },
    };
  },
  relevantStrings: (p) => [LANGUAGE_NAMES[p.language], ...(data().answerFrames[p.language].match(/\p{L}+/gu) ?? [])],
  candidates(p, split) {
    const d = data();
    const questions = side('questions', d.questions, split, (q) => q.question);
    const target: Candidate[] = questions.flatMap((q) =>
      wrapped(ID, split, q.question).map((prompt) => ({
        prompt,
        check: inLanguage(p.language, q),
        pristine: answerIn(q, 'en'),
        edited: answerIn(q, p.language),
        maxNewTokens: 64,
        subject: q.question,
      })),
    );

    const facts: Candidate[] = questions.map((q) => ({
      prompt: q.question,
      check: { type: 'contains_any', values: accepted(q) },
      pristine: answerIn(q, 'en'),
      maxNewTokens: 64,
      stratum: 'factual accuracy',
    }));
    const copies: Candidate[] = side('copyInstructions', d.copyInstructions, split, (t) => t).flatMap((instruction) =>
      side('copyTexts', d.copyTexts, split, (t) => t).map((text) => ({
        prompt: fill(instruction, { text }),
        check: { type: 'copy_exact', text },
        pristine: text,
        maxNewTokens: 48,
        stratum: 'copied strings stay as written',
        subject: text,
      })),
    );

    const others = d.languages.filter((l) => l !== p.language);
    const instructions = side('languageInstructions', d.languageInstructions, split, (t) => t);
    const override: Candidate[] = instructions.flatMap((instruction) =>
      questions.flatMap((q, i) =>
        (['en', others[i % others.length]!] as LanguageCode[]).map((lang) => ({
          prompt: fill(instruction, { question: q.question, language: LANGUAGE_NAMES[lang] }),
          check: inLanguage(lang, q),
          pristine: answerIn(q, lang),
          maxNewTokens: 64,
          stratum: lang === 'en' ? 'English on request' : 'another language on request',
          subject: q.question,
        })),
      ),
    );
    return { target, preservation: [...facts, ...copies], override };
  },
});
