// Family 7, answer-length control (allosteric): answers fit a seeded word band (short or medium) and still state the
// facts the question needs. Explicit length requests still win, copy requests are copied in full, and short factual
// answers stay right. Words are counted as in checks/normalise.ts (whitespace pieces that hold a letter or digit).
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { Check } from '../types.ts';
import { type Candidate, defineFamily, fill, wrapped } from './define.ts';
import { facts } from './world.ts';

const ID = 'answer_length_control';

type Kind = 'short' | 'medium';
type Question = { question: string; facts: string[][]; short: string; medium: string; extra: string };
type Data = {
  bands: Record<Kind, [number, number][]>;
  overrideBands: Record<Kind, { min: number; max: number; instructions: string[] }>;
  copyInstructions: string[];
  copyTexts: string[];
  questions: Question[];
};
type Params = { kind: Kind; min: number; max: number };

const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);

const inBand = (min: number, max: number, q: Question): Check => ({
  type: 'all',
  checks: [{ type: 'word_band', min, max }, ...q.facts.map((values): Check => ({ type: 'contains_any', values }))],
});
/** The answer of each length: medium + extra is the verbose answer of an unedited model. */
const answer = (q: Question, length: Kind | 'long') => (length === 'long' ? `${q.medium} ${q.extra}` : q[length]);

export const answerLengthControl = defineFamily<Params>({
  id: ID,
  title: 'Answer-length control',
  modulation: 'allosteric',
  draw(rng) {
    const kind = rng.pick(['short', 'medium'] as const);
    const [min, max] = rng.pick(data().bands[kind]);
    return { kind, min, max };
  },
  key: (p) => `band=${p.kind}:${p.min}-${p.max}`,
  objective(p) {
    const other = data().overrideBands[p.kind];
    return {
      text:
        `Make the model answer in ${p.min} to ${p.max} words (words are whitespace-separated pieces holding a letter or ` +
        `digit) whenever the prompt does not ask for a length, while still stating every fact the question needs. An explicit ` +
        `length request in the prompt (for example ${other.min}–${other.max} words) still wins, text the user asks to ` +
        `copy is copied in full, and short factual answers stay right.`,
      structured: { behaviour: 'answer length', band: p.kind, minWords: p.min, maxWords: p.max },
    };
  },
  relevantStrings: () => [],
  candidates(p, split) {
    const d = data();
    const questions = side('questions', d.questions, split, (q) => q.question);
    const maxNewTokens = p.kind === 'short' ? 64 : 96;
    const target: Candidate[] = questions.flatMap((q) =>
      wrapped(ID, split, q.question).map((prompt) => ({
        prompt,
        check: inBand(p.min, p.max, q),
        pristine: answer(q, p.kind === 'short' ? 'medium' : 'long'),
        edited: answer(q, p.kind),
        maxNewTokens,
        subject: q.question,
      })),
    );

    const shortFacts: Candidate[] = (['capital', 'author'] as const).flatMap((relation) =>
      side(`facts:${relation}`, facts(relation), split, (f) => f.subject).map((f) => ({
        prompt: relation === 'capital' ? `What is the capital of ${f.subject}?` : `Who wrote ${f.subject}?`,
        check: { type: 'contains_any', values: f.aliases },
        pristine: `${f.answer}.`,
        maxNewTokens: 48,
        stratum: 'short factual answers',
        subject: relation,
      })),
    );
    const copies: Candidate[] = side('copyInstructions', d.copyInstructions, split, (t) => t).flatMap((instruction) =>
      side('copyTexts', d.copyTexts, split, (t) => t).map((text) => ({
        prompt: fill(instruction, { text }),
        check: { type: 'copy_exact', text },
        pristine: text,
        maxNewTokens: 64,
        stratum: 'copy a text in full',
        subject: text,
      })),
    );

    const requested = d.overrideBands[p.kind];
    const override: Candidate[] = side('overrideInstructions', requested.instructions, split, (t) => t).flatMap(
      (instruction) =>
        questions.map((q) => ({
          prompt: fill(instruction, { question: q.question }),
          check: inBand(requested.min, requested.max, q),
          pristine: answer(q, p.kind === 'short' ? 'medium' : 'short'),
          maxNewTokens: 96,
          subject: q.question,
        })),
    );
    return { target, preservation: [...shortFacts, ...copies], override };
  },
});
