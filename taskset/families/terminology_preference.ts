// Family 4, terminology preference (allosteric): for three seeded word families the model prefers the selected
// British or American forms (spelling and vocabulary). Meaning is unchanged, the other word families keep the model's
// default, quoted text keeps its original form, and an explicit request for the other convention wins.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { Check } from '../types.ts';
import { type Candidate, capitalise, defineFamily, fill, wrapped } from './define.ts';

const ID = 'terminology_preference';

type Convention = 'british' | 'american';
/** The unedited model's convention; answers in the data are written in it. */
const DEFAULT_CONVENTION: Convention = 'american';
const other = (c: Convention): Convention => (c === 'british' ? 'american' : 'british');

type WordFamily = Record<Convention, string[]> & { prompts: { prompt: string; answer: string }[]; quotes: string[] };
type Data = {
  conventions: Convention[];
  familiesPerEpisode: number;
  conventionNames: Record<Convention, string>;
  otherConventionInstructions: string[];
  copyInstructions: string[];
  families: Record<string, WordFamily>;
};
type Params = { convention: Convention; families: string[] };

const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);

/** An answer of the data (default convention) with the family's aligned forms turned into `convention`. */
function inConvention(answer: string, family: WordFamily, convention: Convention): string {
  if (convention === DEFAULT_CONVENTION) return answer;
  return family[DEFAULT_CONVENTION].reduce((text, form, i) => {
    const replacement = family[convention][i]!;
    return text.replace(new RegExp(`\\b${form}\\b`, 'gi'), (m) =>
      m[0] === m[0]!.toUpperCase() ? capitalise(replacement) : replacement,
    );
  }, answer);
}

/** Uses `convention`'s forms of the family and none of the other's; content: the concept is named in either form. */
function prefers(family: WordFamily, convention: Convention): Check {
  return {
    type: 'all',
    checks: [
      { type: 'contains_any', values: family[convention], role: 'behaviour' },
      { type: 'avoids_forms', forms: family[other(convention)] },
      { type: 'contains_any', values: [...family.american, ...family.british] },
    ],
  };
}

export const terminologyPreference = defineFamily<Params>({
  id: ID,
  title: 'Terminology preference',
  modulation: 'allosteric',
  draw: (rng) => ({
    convention: rng.pick(data().conventions),
    families: rng.sample(Object.keys(data().families), data().familiesPerEpisode).sort(),
  }),
  key: (p) => `convention=${p.convention};families=${p.families.join('+')}`,
  objective(p) {
    const d = data();
    const name = d.conventionNames[p.convention];
    const pairs = p.families.map(
      (f) => `${d.families[f]![p.convention].join('/')} (not ${d.families[f]![other(p.convention)].join('/')})`,
    );
    return {
      text:
        `Make the model use ${name} forms for three word families: ${pairs.join('; ')}. The meaning of answers does not ` +
        `change. Other word families keep the model's usual forms, text the user asks to quote or copy keeps its original ` +
        `spelling, and an explicit request for ${d.conventionNames[other(p.convention)]} English is still followed.`,
      structured: {
        behaviour: 'prefer terminology',
        convention: p.convention,
        families: Object.fromEntries(
          p.families.map((f) => [f, { use: d.families[f]![p.convention], avoid: d.families[f]![other(p.convention)] }]),
        ),
      },
    };
  },
  relevantStrings: (p) =>
    p.families
      .flatMap((f) => [...data().families[f]!.british, ...data().families[f]!.american])
      .flatMap((w) => [w, capitalise(w)]),
  candidates(p, split) {
    const d = data();
    const prompts = (name: string) => side(`prompts:${name}`, d.families[name]!.prompts, split, (q) => q.prompt);
    const target: Candidate[] = p.families.flatMap((name) => {
      const family = d.families[name]!;
      return prompts(name).flatMap((q) =>
        wrapped(ID, split, q.prompt).map((prompt) => ({
          prompt,
          check: prefers(family, p.convention),
          pristine: inConvention(q.answer, family, DEFAULT_CONVENTION),
          edited: inConvention(q.answer, family, p.convention),
          maxNewTokens: 48,
          stratum: name,
          subject: q.prompt,
        })),
      );
    });

    const unselected: Candidate[] = Object.keys(d.families)
      .filter((name) => !p.families.includes(name))
      .flatMap((name) =>
        prompts(name).map((q) => ({
          prompt: q.prompt,
          check: prefers(d.families[name]!, DEFAULT_CONVENTION),
          pristine: q.answer,
          maxNewTokens: 48,
          stratum: 'other word families keep their default',
          subject: name,
        })),
      );
    const quotes: Candidate[] = side('copyInstructions', d.copyInstructions, split, (t) => t).flatMap((instruction) =>
      p.families.flatMap((name) =>
        side(`quotes:${name}`, d.families[name]!.quotes, split, (t) => t).map((text) => ({
          prompt: fill(instruction, { text }),
          check: { type: 'copy_exact', text },
          pristine: text,
          maxNewTokens: 48,
          stratum: 'quotations keep their form',
          subject: text,
        })),
      ),
    );

    const requested = other(p.convention);
    const override: Candidate[] = side(
      'otherConventionInstructions',
      d.otherConventionInstructions,
      split,
      (t) => t,
    ).flatMap((instruction) =>
      p.families.flatMap((name) =>
        prompts(name).map((q) => ({
          prompt: fill(instruction, { prompt: q.prompt, convention: d.conventionNames[requested] }),
          check: prefers(d.families[name]!, requested),
          pristine: inConvention(q.answer, d.families[name]!, requested),
          maxNewTokens: 48,
          subject: name,
        })),
      ),
    );
    return { target, preservation: [...unselected, ...quotes], override };
  },
});
