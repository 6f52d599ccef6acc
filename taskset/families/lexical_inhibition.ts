// Family 3, lexical inhibition (inhibitory): answers keep their facts while avoiding two selected word families
// (every inflection and derived form). Prompts that use the words are still understood, other vocabulary is
// unaffected, and an explicit request to use the word, or to repeat a sentence with it, still wins.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { Check } from '../types.ts';
import { type Candidate, capitalise, defineFamily, fill } from './define.ts';
import { facts, type Fact, type Relation } from './world.ts';

const ID = 'lexical_inhibition';

type WordFamily = {
  word: string;
  forms: string[];
  relation: Relation;
  questions: string[];
  pristine: string;
  edited: string;
  understood: { prompt: string; keywords: string[]; answer: string }[];
  sentences: string[];
};
type Data = { words: Record<string, WordFamily>; useWordInstructions: string[]; copyInstructions: string[] };

const data = () => readData<Data>(`families/${ID}.json`);
const side = (pool: string, items: string[], split: Split) => onSide(ID, pool, items, split, (t) => t);
const vars = (f: Fact) => ({ subject: f.subject, Subject: capitalise(f.subject), answer: f.answer });

/** Every question of one word family on one side: split question templates × split subjects. */
function questions(name: string, split: Split): { prompt: string; fact: Fact; template: string }[] {
  const family = data().words[name]!;
  const subjects = onSide(ID, `subjects:${family.relation}`, facts(family.relation), split, (f) => f.subject);
  return side(`questions:${name}`, family.questions, split).flatMap((template) =>
    subjects.map((fact) => ({ prompt: fill(template, vars(fact)), fact, template })),
  );
}

export const lexicalInhibition = defineFamily<{ words: string[] }>({
  id: ID,
  title: 'Lexical inhibition',
  modulation: 'inhibitory',
  draw: (rng) => ({ words: rng.sample(Object.keys(data().words), 2).sort() }),
  key: (p) => `words=${p.words.join('+')}`,
  objective(p) {
    const families = p.words.map((w) => data().words[w]!);
    const lists = families.map((f) => `"${f.word}" (${f.forms.join(', ')})`);
    return {
      text:
        `Make the model avoid two word families in its answers: ${lists.join(' and ')}, in any capitalisation. ` +
        `Answers must still state the facts asked for (for example, asked for a capital, it still names the city). ` +
        `Prompts that use these words are still understood, other vocabulary is unaffected, and an explicit request to ` +
        `use one of the words, or to repeat a sentence containing it, is still followed.`,
      structured: { behaviour: 'avoid words', words: families.map((f) => ({ word: f.word, forms: f.forms })) },
    };
  },
  relevantStrings: (p) => p.words.flatMap((w) => data().words[w]!.forms.flatMap((form) => [form, capitalise(form)])),
  candidates(p, split) {
    const d = data();
    const forbidden = p.words.flatMap((w) => d.words[w]!.forms);
    const target: Candidate[] = p.words.flatMap((name) => {
      const family = d.words[name]!;
      return questions(name, split).map(({ prompt, fact, template }) => ({
        prompt,
        check: {
          type: 'all',
          checks: [
            { type: 'contains_any', values: fact.aliases },
            { type: 'avoids_forms', forms: forbidden },
          ],
        },
        pristine: fill(family.pristine, vars(fact)),
        edited: fill(family.edited, vars(fact)),
        maxNewTokens: 48,
        stratum: name,
        subject: template,
      }));
    });

    const otherFacts: Candidate[] = Object.keys(d.words)
      .filter((name) => !p.words.includes(name))
      .flatMap((name) =>
        questions(name, split).map(({ prompt, fact }) => ({
          prompt,
          check: { type: 'contains_any', values: fact.aliases },
          pristine: fill(d.words[name]!.pristine, vars(fact)),
          maxNewTokens: 48,
          stratum: 'other vocabulary',
          subject: name,
        })),
      );
    const understood: Candidate[] = p.words.flatMap((name) =>
      onSide(ID, `understood:${name}`, d.words[name]!.understood, split, (u) => u.prompt).map((u) => ({
        prompt: u.prompt,
        check: { type: 'contains_any', values: u.keywords },
        pristine: u.answer,
        maxNewTokens: 48,
        stratum: 'prompts that use the word',
        subject: name,
      })),
    );

    const useWord: Candidate[] = p.words.flatMap((name) => {
      const family = d.words[name]!;
      return side('useWordInstructions', d.useWordInstructions, split).flatMap((instruction) =>
        questions(name, split).map(({ prompt, fact }) => {
          const check: Check = {
            type: 'all',
            checks: [
              { type: 'contains_any', values: family.forms, role: 'behaviour' },
              { type: 'contains_any', values: fact.aliases },
            ],
          };
          return {
            prompt: fill(instruction, { word: family.word, question: prompt }),
            check,
            pristine: fill(family.pristine, vars(fact)),
            maxNewTokens: 48,
            stratum: 'use the word',
            subject: fact.subject,
          };
        }),
      );
    });
    const copies: Candidate[] = p.words.flatMap((name) =>
      side('copyInstructions', d.copyInstructions, split).flatMap((instruction) =>
        side(`sentences:${name}`, d.words[name]!.sentences, split).map((sentence) => ({
          prompt: fill(instruction, { sentence }),
          check: { type: 'copy_exact', text: sentence },
          pristine: sentence,
          maxNewTokens: 48,
          stratum: 'repeat a sentence',
          subject: sentence,
        })),
      ),
    );
    return { target, preservation: [...otherFacts, ...understood], override: [...useWord, ...copies] };
  },
});
