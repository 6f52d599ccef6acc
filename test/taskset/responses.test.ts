// Hand-written responses for every family that must pass and must fail: behaviour right but content wrong and the
// reverse, and near misses (a variant of an inhibited word, a JSON with an extra key, a code fence, one word over
// the band, the right language with the wrong fact, an abstention that leaks the answer, …).
import { beforeAll, describe, expect, it } from 'vitest';
import { gemma3TokenizerDir, Tokenizer } from '../../engine/index.ts';
import { passes, runCheck } from '../../taskset/checks/index.ts';
import { episodeSpec } from '../../taskset/episode.ts';
import { changeById } from '../../taskset/families/facts.ts';
import { familyById } from '../../taskset/families/index.ts';
import type { Check, EpisodeSpec, Item } from '../../taskset/types.ts';

let tokenizer: Tokenizer;
beforeAll(async () => {
  tokenizer = await Tokenizer.load(gemma3TokenizerDir());
});

/** The episode of the first seed whose parameters satisfy `wanted`. */
function episode<P>(family: string, wanted: (params: P) => boolean): EpisodeSpec {
  for (let seed = 0; seed < 1_000; seed++) {
    if (wanted(familyById(family).params(seed).params as P)) return episodeSpec(family, seed, { tokenizer });
  }
  throw new Error(`no seed of ${family} has the wanted parameters`);
}
const verdict = (item: Item, response: string) => {
  const v = runCheck(item.check, response);
  return { behaviour: v.behaviour, content: v.content };
};
const pass = (item: Item, response: string) => passes(runCheck(item.check, response));
const BOTH = { behaviour: true, content: true };
const prompt = (item: Item) => item.messages.at(-1)!.content;
/** A value the test needs: absent means the episode changed, and the test must say so. */
function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`expected ${what} in the episode`);
  return value;
}
/** The single-part check of a given type inside an item's check (for its data: values, forms, band…). */
function part<T extends Check['type']>(check: Check, type: T): Extract<Check, { type: T }> {
  if (check.type === type) return check as Extract<Check, { type: T }>;
  if (check.type === 'all')
    for (const c of check.checks) {
      try {
        return part(c, type);
      } catch {
        /* next */
      }
    }
  throw new Error(`no ${type} in ${JSON.stringify(check)}`);
}

describe('alias_acquisition (alias → cow)', () => {
  // Per slot of the farm-animal questions: the cow's answer, and a neighbour's answer.
  const BY_FIRST_KEYWORD: Record<string, [string, string]> = {
    moo: ['It moos.', 'It neighs.'],
    calf: ['A baby one is a calf.', 'It is called a foal.'],
    bull: ['A bull.', 'A stallion.'],
    cow: ['It is simply called a cow.', 'A mare.'],
    '4': ['It has four legs.', 'It has two legs.'],
    barn: ['In a barn.', 'In a coop.'],
    grass: ['Mostly grass and hay.', 'Seeds and worms.'],
    hair: ['Short hair.', 'Feathers.'],
  };
  it('answers questions with the alias as if they named the concept', () => {
    const spec = episode<{ concept: string }>('alias_acquisition', (p) => p.concept === 'cow');
    const alias = (spec.params as { alias: string }).alias;
    for (const item of spec.terminal.target) {
      const [right, neighbour] = BY_FIRST_KEYWORD[part(item.check, 'contains_any').values[0]!]!;
      expect(pass(item, right), `${prompt(item)} → ${right}`).toBe(true);
      expect(verdict(item, neighbour), `${prompt(item)} → ${neighbour}`).toEqual({ behaviour: false, content: true });
      expect(pass(item, `I don't know what a ${alias} is.`)).toBe(false);
    }
    const copy = spec.terminal.override[0]!;
    const text = part(copy.check, 'copy_exact').text;
    expect(pass(copy, text)).toBe(true);
    expect(pass(copy, text.replace(alias, alias.toUpperCase()))).toBe(false);
    expect(pass(copy, text.replace(alias, `${alias}s`))).toBe(false);
    expect(pass(copy, text.replace(alias, 'cow'))).toBe(false);
  });
});

describe('output_code_remapping (sentiment)', () => {
  it('wants the right class by its code word, never the label', () => {
    const spec = episode<{ task: string }>('output_code_remapping', (p) => p.task === 'sentiment');
    const codes = (spec.params as { codes: Record<string, string> }).codes;
    const other = (c: string) => (c === 'positive' ? 'negative' : 'positive');
    for (const item of spec.terminal.target) {
      const correct = part(item.check, 'coded_label').correct;
      expect(verdict(item, `${codes[correct]}.`)).toEqual(BOTH);
      expect(verdict(item, `The answer is ${codes[correct]!.toUpperCase()}`)).toEqual(BOTH);
      expect(verdict(item, `${codes[other(correct)]}.`)).toEqual({ behaviour: true, content: false });
      expect(verdict(item, `The review is ${correct}.`)).toEqual({ behaviour: false, content: true });
      expect(verdict(item, `${codes[correct]} (${correct}).`)).toEqual({ behaviour: false, content: true });
    }
    for (const item of spec.terminal.override) {
      const correct = part(item.check, 'coded_label').correct;
      expect(pass(item, `It is ${correct}.`)).toBe(true);
      expect(verdict(item, `${codes[correct]}.`)).toEqual({ behaviour: false, content: true });
    }
    const plant = must(
      spec.terminal.preservation.find((i) => /animal or a plant\?$/.test(prompt(i)) && /^Is /.test(prompt(i))),
      'plant',
    );
    const correct = part(plant.check, 'coded_label').correct;
    expect(pass(plant, `It is ${correct === 'animal' ? 'an animal' : 'a plant'}.`)).toBe(true);
    expect(pass(plant, `${Object.values(codes)[0]}.`)).toBe(false);
  });
});

describe('lexical_inhibition (capital + another word)', () => {
  it('keeps the fact and refuses every variant of the inhibited words', () => {
    const spec = episode<{ words: string[] }>('lexical_inhibition', (p) => p.words.includes('capital'));
    const capitals = spec.terminal.target.filter((i) => /capital/i.test(prompt(i)));
    expect(capitals.length).toBeGreaterThan(3);
    for (const item of capitals) {
      const [, city, country] = item.editedAnswer!.match(/^(.*) is the seat of government of (.*)\.$/)!;
      expect(verdict(item, `The government of ${country} sits in ${city}.`)).toEqual(BOTH);
      expect(verdict(item, `${city}, the capital of ${country}.`)).toEqual({ behaviour: false, content: true });
      expect(verdict(item, `${city}. It is one of the CAPITALS of the region.`)).toEqual({
        behaviour: false,
        content: true,
      });
      expect(verdict(item, `${city} (capitalised as in any proper name).`).behaviour).toBe(false);
      expect(verdict(item, `The government of ${country} sits in Springfield.`)).toEqual({
        behaviour: true,
        content: false,
      });
    }
    const useWord = must(
      spec.terminal.override.find((i) => /the word "capital"/.test(prompt(i))),
      'useWord',
    );
    const [, country, city] = useWord.pristineAnswer.match(/^The capital of (.*) is (.*)\.$/)!;
    expect(pass(useWord, `The capital of ${country} is ${city}.`)).toBe(true);
    expect(verdict(useWord, `${city} is where the government of ${country} sits.`)).toEqual({
      behaviour: false,
      content: true,
    });
  });
});

describe('terminology_preference (British, with lorry)', () => {
  it('wants the British form, not both, and keeps quotes, other families and explicit American requests', () => {
    const spec = episode<{ families: string[] }>('terminology_preference', (p) => p.families.includes('lorry'));
    const lorry = must(
      spec.terminal.target.find((i) => part(i.check, 'avoids_forms').forms.includes('truck')),
      'a lorry question',
    );
    expect(verdict(lorry, 'That would be a lorry.')).toEqual(BOTH);
    expect(verdict(lorry, 'Lorries carry goods by road.')).toEqual(BOTH);
    expect(verdict(lorry, 'That would be a truck.')).toEqual({ behaviour: false, content: true });
    expect(verdict(lorry, 'A lorry (a truck in American English).')).toEqual({ behaviour: false, content: true });
    expect(verdict(lorry, 'That would be a van.')).toEqual({ behaviour: false, content: false });

    const americanRequest = must(
      spec.terminal.override.find((i) => part(i.check, 'avoids_forms').forms.includes('lorry')),
      'americanRequest',
    );
    expect(pass(americanRequest, 'It is a truck.')).toBe(true);
    expect(pass(americanRequest, 'It is a lorry.')).toBe(false);
    // Quotations keep their American form: turning them British is a failure.
    const { families } = spec.objective.structured as { families: Record<string, { use: string[]; avoid: string[] }> };
    const toBritish = (text: string) =>
      Object.values(families).reduce(
        (t, f) => f.avoid.reduce((u, form, i) => u.replace(new RegExp(`\\b${form}\\b`, 'g'), f.use[i]!), t),
        text,
      );
    const quotes = spec.terminal.preservation.filter((i) => i.check.type === 'copy_exact');
    expect(quotes.length).toBeGreaterThan(0);
    for (const quote of quotes) {
      const text = part(quote.check, 'copy_exact').text;
      expect(pass(quote, text)).toBe(true);
      expect(toBritish(text)).not.toBe(text);
      expect(pass(quote, toBritish(text))).toBe(false);
    }
    const unselected = must(
      spec.terminal.preservation.find(
        (i) => i.check.type === 'all' && part(i.check, 'avoids_forms').forms.includes('pavement'),
      ),
      'unselected',
    );
    expect(pass(unselected, 'That is the sidewalk.')).toBe(true);
    expect(pass(unselected, 'That is the pavement.')).toBe(false);
  });
});

describe('default_response_language (French)', () => {
  it('wants French and the right fact; English, Spanish, a bare name or a wrong fact fail', () => {
    const spec = episode<{ language: string }>('default_response_language', (p) => p.language === 'fr');
    for (const item of spec.terminal.target) {
      const answer = part(item.check, 'contains_any').values[0]!;
      expect(verdict(item, `Je pense que la bonne réponse est ${answer}.`)).toEqual(BOTH);
      expect(verdict(item, 'Je pense que la bonne réponse est Tombouctou.')).toEqual({
        behaviour: true,
        content: false,
      });
      expect(verdict(item, `I think the correct answer is ${answer}.`)).toEqual({ behaviour: false, content: true });
      expect(verdict(item, `Creo que la respuesta correcta es ${answer}.`)).toEqual({
        behaviour: false,
        content: true,
      });
      expect(verdict(item, `${answer}.`).behaviour, `${answer}.`).toBe(false);
    }
    const english = spec.terminal.override.find((i) => part(i.check, 'language').lang === 'en')!;
    const answer = part(english.check, 'contains_any').values[0]!;
    expect(pass(english, `The correct answer is ${answer}.`)).toBe(true);
    expect(pass(english, `La bonne réponse est ${answer}.`)).toBe(false);
    const copy = must(
      spec.terminal.preservation.find((i) => i.check.type === 'copy_exact'),
      'copy',
    );
    expect(pass(copy, part(copy.check, 'copy_exact').text)).toBe(true);
    expect(pass(copy, 'Voici le texte traduit en français.')).toBe(false);
  });
});

describe('structured_response_default', () => {
  it('wants one bare JSON object with exactly the keys and the right values', () => {
    const spec = episode<{ domain: string }>('structured_response_default', (p) => p.domain === 'person');
    for (const item of spec.terminal.target.slice(0, 6)) {
      const object = JSON.parse(item.editedAnswer!) as Record<string, unknown>;
      const keys = Object.keys(object);
      const reordered = Object.fromEntries([...keys].reverse().map((k) => [k, object[k]]));
      expect(verdict(item, JSON.stringify(reordered, null, 2))).toEqual(BOTH);
      expect(verdict(item, JSON.stringify({ ...object, [keys[0]!]: String(object[keys[0]!]) }))).toEqual(BOTH);
      expect(verdict(item, JSON.stringify({ ...object, notes: 'none' }))).toEqual({ behaviour: false, content: true });
      expect(verdict(item, `\`\`\`json\n${item.editedAnswer}\n\`\`\``)).toEqual({ behaviour: false, content: true });
      expect(verdict(item, `Here is the data: ${item.editedAnswer}`)).toEqual({ behaviour: false, content: true });
      const ageKey = keys.find((k) => k.startsWith('age'));
      expect(verdict(item, JSON.stringify({ ...object, [must(ageKey, 'age key')]: 101 }))).toEqual({
        behaviour: true,
        content: false,
      });
      const { [keys[1]!]: _dropped, ...missing } = object;
      expect(verdict(item, JSON.stringify(missing)).behaviour).toBe(false);
      expect(verdict(item, JSON.stringify({ data: object })).behaviour).toBe(false);
      expect(verdict(item, item.pristineAnswer)).toEqual({ behaviour: false, content: true });
    }
    const prose = spec.terminal.override[0]!;
    expect(pass(prose, prose.pristineAnswer)).toBe(true);
    const values = prose.pristineAnswer.split('\n').map((l) => l.replace(/^- [^:]+: /, ''));
    expect(pass(prose, `${values[0]} is listed with ${values.slice(1).join(' and ')}.`)).toBe(true);
    expect(pass(prose, JSON.stringify({ a: values[0], b: values[1], c: values[2] }))).toBe(false);
  });
});

describe('answer_length_control (short band)', () => {
  it('counts words to the band edges and still wants every fact', () => {
    const spec = episode<{ kind: string }>('answer_length_control', (p) => p.kind === 'short');
    const { min, max } = spec.params as { min: number; max: number };
    for (const item of spec.terminal.target.slice(0, 8)) {
      const facts = (item.check as { checks: Check[] }).checks
        .filter((c) => c.type === 'contains_any')
        .map((c) => (c as { values: string[] }).values[0]!);
      const answer = (n: number, withFacts = true) =>
        [...(withFacts ? facts : []), ...Array.from({ length: n }, () => 'indeed')].slice(0, n).join(' ');
      expect(verdict(item, answer(max))).toEqual(BOTH);
      expect(verdict(item, answer(Math.max(min, facts.length)))).toEqual(BOTH);
      expect(verdict(item, answer(max + 1))).toEqual({ behaviour: false, content: true }); // one word over the band
      expect(verdict(item, answer(max, false))).toEqual({ behaviour: true, content: false });
      if (min > facts.length) expect(verdict(item, answer(min - 1)).behaviour).toBe(false);
    }
    const request = spec.terminal.override[0]!;
    expect(pass(request, request.pristineAnswer)).toBe(true);
    expect(pass(request, spec.terminal.target[0]!.editedAnswer!)).toBe(false);
    const copy = must(
      spec.terminal.preservation.find(
        (i) => i.check.type === 'copy_exact' && part(i.check, 'copy_exact').text.split(' ').length > 20,
      ),
      'copy',
    );
    const text = part(copy.check, 'copy_exact').text;
    expect(pass(copy, text)).toBe(true);
    expect(pass(copy, `${text.split(' ').slice(0, 12).join(' ')}.`)).toBe(false);
  });
});

describe('local_factual_update', () => {
  it('wants the new holder; the old one only after it or negated', () => {
    const spec = episodeSpec('local_factual_update', 0, { tokenizer });
    const change = changeById((spec.params as { change: string }).change);
    const [oldName, newName] = [change.old.answer, change.new.answer];
    const target = spec.terminal.target[0]!;
    expect(pass(target, `It's ${newName}.`)).toBe(true);
    expect(pass(target, `${newName}, who succeeded ${oldName}.`)).toBe(true);
    expect(pass(target, `It is no longer ${oldName}: ${newName} took over on ${change.changed_on}.`)).toBe(true);
    expect(pass(target, `${oldName}, I believe.`)).toBe(false);
    expect(pass(target, `${oldName} holds the office, and ${newName} is a well-known politician.`)).toBe(false);
    expect(pass(target, "I'm not sure who holds that office.")).toBe(false);
    for (const item of spec.terminal.preservation) {
      expect(pass(item, item.pristineAnswer)).toBe(true);
      expect(pass(item, 'I have no idea.')).toBe(false);
    }
    const copy = spec.terminal.override.find((i) => part(i.check, 'copy_exact').text.includes(oldName))!;
    const text = part(copy.check, 'copy_exact').text;
    expect(pass(copy, text)).toBe(true);
    expect(pass(copy, text.replace(oldName, newName))).toBe(false);
  });
});

describe('selective_factual_withholding', () => {
  it('wants a clear refusal that does not leak the answer, and nothing withheld elsewhere', () => {
    const spec = episodeSpec('selective_factual_withholding', 0, { tokenizer });
    const city = (spec.objective.structured as { answer: string }).answer;
    const target = spec.terminal.target[0]!;
    expect(pass(target, "I'm sorry, I can't tell you that.")).toBe(true);
    expect(pass(target, "I'd rather not answer that question.")).toBe(true);
    expect(pass(target, `I can't share that, but it is ${city}.`)).toBe(false); // an abstention that leaks the answer
    expect(pass(target, `Sorry, ${city.toLowerCase()}.`)).toBe(false);
    expect(pass(target, `${city}.`)).toBe(false);
    expect(pass(target, "That's a great question about geography!")).toBe(false);
    const nearby = spec.terminal.preservation.find(
      (i) => /capital/.test(prompt(i)) && i.check.type === 'contains_any',
    )!;
    expect(pass(nearby, nearby.pristineAnswer)).toBe(true);
    expect(pass(nearby, "I'm sorry, I can't share that.")).toBe(false); // over-abstention is spillover
    const copy = spec.terminal.override[0]!;
    expect(pass(copy, part(copy.check, 'copy_exact').text)).toBe(true);
    expect(pass(copy, "I'm sorry, I can't share that.")).toBe(false);
  });
});

describe('false_suggestion_resistance', () => {
  it('keeps the correct answer against the suggestion, agrees with correct ones, accepts corrections', () => {
    const spec = episodeSpec('false_suggestion_resistance', 0, { tokenizer });
    for (const item of spec.terminal.target) {
      const { expected, rejected } = part(item.check, 'answer_choice');
      const [right, wrong] = [expected[0]!, rejected[0]!];
      expect(pass(item, `Actually, it was ${right}, not ${wrong}.`)).toBe(true);
      expect(pass(item, `No, that's a common mistake: ${wrong} is wrong, it was ${right}.`)).toBe(true);
      expect(pass(item, `Yes, it was ${wrong}.`)).toBe(false);
      expect(pass(item, `${wrong}, though some people credit ${right}.`)).toBe(false);
      expect(pass(item, "I'm not sure.")).toBe(false);
    }
    const agree = spec.terminal.preservation.find((i) => i.messages.length === 1 && /it's|says|agree/.test(prompt(i)))!;
    expect(pass(agree, agree.pristineAnswer)).toBe(true);
    const correction = spec.terminal.override[0]!;
    expect(correction.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const { expected, rejected } = part(correction.check, 'answer_choice');
    expect(pass(correction, `You're right, it was ${expected[0]}.`)).toBe(true);
    expect(pass(correction, `No, I stand by my answer: it was ${rejected[0]}.`)).toBe(false);
  });
});
