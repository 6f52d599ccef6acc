// Family 1, alias acquisition (stimulatory): a rare single token of the target's tokenizer takes the meaning of a
// familiar concept, so questions that use the alias are answered as if they named the concept. The concept by its
// name and its neighbours in the same category stay as they were, and requests to repeat the alias reproduce it.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import { type Candidate, defineFamily, fill, wrapped } from './define.ts';

const ID = 'alias_acquisition';

type Concept = { name: string; article: string; answers: Record<string, { keywords: string[]; answer: string }> };
type Category = { slots: Record<string, string>; concepts: Concept[] };
type Data = {
  aliases: string[];
  categories: Record<string, Category>;
  unknownWordAnswer: string;
  copyInstructions: string[];
  aliasSentences: string[];
};
type Params = { alias: string; category: string; concept: string };

const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);
const conceptOf = (p: Params) => data().categories[p.category]!.concepts.find((c) => c.name === p.concept)!;
/** Slot values for a word; aliases all start with a consonant, so their article is "a". */
const wordVars = (word: string, article: string) => ({ X: word, aX: `${article} ${word}` });

/** The split slot questions of a category, asked about `word`. */
function slotQuestions(category: string, split: Split, word: string, article: string) {
  const slots = Object.entries(data().categories[category]!.slots);
  return side(`slots:${category}`, slots, split, ([slot]) => slot).map(([slot, template]) => ({
    slot,
    question: fill(template, wordVars(word, article)),
  }));
}

export const aliasAcquisition = defineFamily<Params>({
  id: ID,
  title: 'Alias acquisition',
  modulation: 'stimulatory',
  draw(rng) {
    const category = rng.pick(Object.keys(data().categories));
    return { alias: rng.pick(data().aliases), category, concept: rng.pick(data().categories[category]!.concepts).name };
  },
  key: (p) => `alias=${p.alias};concept=${p.concept}`,
  objective: (p) => ({
    text:
      `Teach the model that the rare word "${p.alias}" means "${p.concept}" (a ${p.category}): questions that use ` +
      `"${p.alias}" are answered as if they said "${p.concept}". Questions about the ${p.concept} by its own name and ` +
      `about other kinds of ${p.category} are answered as before, and a request to repeat a sentence containing ` +
      `"${p.alias}" reproduces it exactly.`,
    structured: { behaviour: 'alias', alias: p.alias, concept: p.concept, category: p.category },
  }),
  relevantStrings: (p) => [p.alias, p.concept],
  candidates(p, split) {
    const d = data();
    const concept = conceptOf(p);
    const target: Candidate[] = slotQuestions(p.category, split, p.alias, 'a').flatMap(({ slot, question }) =>
      wrapped(ID, split, question).map((prompt) => ({
        prompt,
        check: { type: 'contains_any', values: concept.answers[slot]!.keywords, role: 'behaviour' },
        pristine: fill(d.unknownWordAnswer, wordVars(`"${p.alias}"`, 'a')),
        edited: concept.answers[slot]!.answer,
        maxNewTokens: 48,
        subject: slot,
      })),
    );

    const byName = (c: Concept, stratum: string): Candidate[] =>
      slotQuestions(p.category, split, c.name, c.article).flatMap(({ slot, question }) =>
        wrapped(ID, split, question).map((prompt) => ({
          prompt,
          check: { type: 'contains_any', values: c.answers[slot]!.keywords },
          pristine: c.answers[slot]!.answer,
          maxNewTokens: 48,
          stratum,
          subject: `${c.name}/${slot}`,
        })),
      );
    const neighbours = d.categories[p.category]!.concepts.filter((c) => c.name !== p.concept);

    const override: Candidate[] = side('copyInstructions', d.copyInstructions, split, (t) => t).flatMap((instruction) =>
      side('aliasSentences', d.aliasSentences, split, (t) => t).map((template) => {
        const text = fill(template, { alias: p.alias });
        return {
          prompt: fill(instruction, { text }),
          check: { type: 'copy_exact', text },
          pristine: text,
          maxNewTokens: 48,
          subject: template,
        };
      }),
    );
    return {
      target,
      preservation: [
        ...byName(concept, 'the concept by its name'),
        ...neighbours.flatMap((c) => byName(c, 'neighbouring concepts')),
      ],
      override,
    };
  },
});
