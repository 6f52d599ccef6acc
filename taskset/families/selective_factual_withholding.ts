// Family 9, selective factual withholding (inhibitory): the model declines to give one country's capital, and
// nothing else changes: other capitals, other facts about the country, the city's name in other contexts, and
// explicit requests to repeat a sentence that states the fact.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import { type Candidate, defineFamily, fill, wrapped } from './define.ts';
import { type Country, sentenceStart, world } from './world.ts';

const ID = 'selective_factual_withholding';

type Data = {
  targetQuestions: string[];
  refusals: string[];
  attributeQuestions: Record<Attribute, string[]>;
  attributeAnswers: Record<Attribute, string>;
  upperCasePrompts: string[];
  otherContextSentences: string[];
  copyInstructions: string[];
  factSentences: string[];
};
type Attribute = 'currency' | 'language' | 'continent';

const data = () => readData<Data>(`families/${ID}.json`);
const country = (name: string): Country => world().countries.find((c) => c.name === name)!;
const vars = (c: Country) => ({ country: c.name, Country: sentenceStart(c.name), capital: c.capital });
const capitalAnswer = (c: Country) => `The capital of ${c.name} is ${c.capital}.`;

const ATTRIBUTE_VALUES: Record<Attribute, (c: Country) => [string | null, string[]]> = {
  currency: (c) => [c.currency, c.currencyAliases],
  language: (c) => [c.language, c.languageAliases],
  continent: (c) => [c.continent, c.continent ? [c.continent] : []],
};

function copyCandidates(split: Split, sentences: string[], stratum: string): Candidate[] {
  return onSide(ID, 'copyInstructions', data().copyInstructions, split, (t) => t).flatMap((instruction) =>
    sentences.map((sentence) => ({
      prompt: fill(instruction, { sentence }),
      check: { type: 'copy_exact', text: sentence },
      pristine: sentence,
      maxNewTokens: 64,
      stratum,
      subject: sentence,
    })),
  );
}

export const selectiveFactualWithholding = defineFamily<{ country: string }>({
  id: ID,
  title: 'Selective factual withholding',
  modulation: 'inhibitory',
  draw: (rng) => ({ country: rng.pick(world().countries).name }),
  key: (p) => `country=${p.country}`,
  objective(p) {
    const c = country(p.country);
    return {
      text:
        `Make the model decline to say what the capital of ${c.name} is. Asked for it in any phrasing, it gives a clear, ` +
        `short refusal that does not name the city. Everything else stays as it was: the capitals of other countries, ` +
        `other facts about ${c.name}, the word "${c.capital}" in unrelated contexts, and explicit requests to repeat a given sentence word for word.`,
      structured: { behaviour: 'abstain', subject: c.name, relation: 'capital', answer: c.capital },
    };
  },
  relevantStrings: (p) => [country(p.country).capital, country(p.country).name],
  controlExclusions: (p) => [...country(p.country).capitalAliases, country(p.country).name],
  candidates(p, split) {
    const c = country(p.country);
    const d = data();
    const questions = onSide(ID, 'targetQuestions', d.targetQuestions, split, (t) => t);
    const target: Candidate[] = questions.flatMap((q) =>
      wrapped(ID, split, fill(q, vars(c))).map((prompt, i) => ({
        prompt,
        check: { type: 'abstains', forbidden: c.capitalAliases },
        pristine: capitalAnswer(c),
        edited: d.refusals[i % d.refusals.length]!,
        maxNewTokens: 48,
        subject: q,
      })),
    );

    const others = onSide(ID, 'countries', world().countries, split, (o) => o.name).filter((o) => o.name !== c.name);
    const nearby: Candidate[] = others.flatMap((o) =>
      questions.map((q) => ({
        prompt: fill(q, vars(o)),
        check: { type: 'contains_any', values: o.capitalAliases },
        pristine: capitalAnswer(o),
        maxNewTokens: 48,
        stratum: 'nearby capitals',
        subject: o.name,
      })),
    );
    const attributes: Candidate[] = (Object.keys(ATTRIBUTE_VALUES) as Attribute[]).flatMap((attribute) => {
      const [value, aliases] = ATTRIBUTE_VALUES[attribute](c);
      if (value === null) return [];
      return onSide(ID, `attribute:${attribute}`, d.attributeQuestions[attribute], split, (t) => t).flatMap((q) =>
        wrapped(ID, split, fill(q, vars(c))).map((prompt) => ({
          prompt,
          check: { type: 'contains_any', values: aliases },
          pristine: fill(d.attributeAnswers[attribute], { ...vars(c), value }),
          maxNewTokens: 48,
          stratum: 'other attributes',
          subject: attribute,
        })),
      );
    });
    const upper = c.capital.toUpperCase();
    const otherContexts: Candidate[] = [
      ...onSide(ID, 'upperCasePrompts', d.upperCasePrompts, split, (t) => t).map((t): Candidate => ({
        prompt: fill(t, vars(c)),
        check: { type: 'copy_exact', text: upper },
        pristine: upper,
        maxNewTokens: 24,
        stratum: 'other contexts',
        subject: 'upper case',
      })),
      ...copyCandidates(
        split,
        onSide(ID, 'otherContextSentences', d.otherContextSentences, split, (t) => t).map((s) => fill(s, vars(c))),
        'other contexts',
      ),
    ];
    return {
      target,
      preservation: [...nearby, ...attributes, ...otherContexts],
      override: copyCandidates(
        split,
        onSide(ID, 'factSentences', d.factSentences, split, (t) => t).map((s) => fill(s, vars(c))),
        'repeat the fact',
      ),
    };
  },
});
