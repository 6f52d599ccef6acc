// Family 6, structured response default (stimulatory): extraction prompts that name no format get a shallow JSON
// object with exactly the seeded keys and the right values, with no prose and no code fence. Single-value questions
// and other questions are answered as before, and an explicit request for prose gets prose.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { Check } from '../types.ts';
import { type Candidate, defineFamily, fill } from './define.ts';
import { facts } from './world.ts';

const ID = 'structured_response_default';

type Field = { keys: string[]; label: string; description: string };
type Domain = { fields: Record<string, Field>; passages: string[]; records: Record<string, string | number>[] };
type Data = {
  domains: Record<string, Domain>;
  extractionTemplates: string[];
  singleFieldTemplates: string[];
  proseInstructions: string[];
};
type Params = { domain: string; fields: string[]; keys: string[] };

const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);

/** "name, age and city of residence" */
function describe(domain: Domain, fields: string[]): string {
  const names = fields.map((f) => domain.fields[f]!.description);
  return names.length === 1 ? names[0]! : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/** How an unedited model lists the values: one "- Label: value" line per field. */
const bullets = (domain: Domain, fields: string[], record: Record<string, string | number>) =>
  fields.map((f) => `- ${domain.fields[f]!.label}: ${record[f]}`).join('\n');

/** Extraction prompts of one side: split templates × split passages × split records. */
function extractions(p: Params, split: Split) {
  const domain = data().domains[p.domain]!;
  const records = side(`records:${p.domain}`, domain.records, split, (r) => String(Object.values(r)[0]));
  const passages = side(`passages:${p.domain}`, domain.passages, split, (t) => t);
  return side('extractionTemplates', data().extractionTemplates, split, (t) => t).flatMap((template) =>
    passages.flatMap((passage) =>
      records.map((record) => {
        const text = fill(passage, record);
        return { prompt: fill(template, { fields: describe(domain, p.fields), passage: text }), passage: text, record };
      }),
    ),
  );
}

export const structuredResponseDefault = defineFamily<Params>({
  id: ID,
  title: 'Structured response default',
  modulation: 'stimulatory',
  draw(rng) {
    const domainName = rng.pick(Object.keys(data().domains));
    const domain = data().domains[domainName]!;
    const all = Object.keys(domain.fields);
    const fields = rng.sample(all, 3).sort((a, b) => all.indexOf(a) - all.indexOf(b));
    return { domain: domainName, fields, keys: fields.map((f) => rng.pick(domain.fields[f]!.keys)) };
  },
  key: (p) => `domain=${p.domain};keys=${p.keys.join(',')}`,
  objective(p) {
    const domain = data().domains[p.domain]!;
    const keys = p.keys.map((k) => `"${k}"`).join(', ');
    return {
      text:
        `When a prompt asks to extract the ${describe(domain, p.fields)} from a short ${p.domain} description and names ` +
        `no format, make the model reply with only a JSON object with exactly the keys ${keys} (in that order: ` +
        `${p.fields.map((f, i) => `${p.keys[i]} = ${domain.fields[f]!.description}`).join(', ')}) holding the values from ` +
        `the text: no prose around it, no code fence, no other keys, no nesting. Questions about a single value, other ` +
        `questions, and explicit requests for a prose answer are answered as before.`,
      structured: { behaviour: 'reply with JSON', domain: p.domain, keys: p.keys, fields: p.fields, allowFence: false },
    };
  },
  relevantStrings: (p) => ['{', '{"', ...p.keys.map((k) => `"${k}"`)],
  candidates(p, split) {
    const d = data();
    const domain = d.domains[p.domain]!;
    const valuesOf = (record: Record<string, string | number>) =>
      Object.fromEntries(p.fields.map((f, i) => [p.keys[i]!, [String(record[f])]]));
    const own = extractions(p, split);
    const target: Candidate[] = own.map(({ prompt, record }) => ({
      prompt,
      check: { type: 'json_exact_keys', keys: p.keys, values: valuesOf(record), allowFence: false },
      pristine: bullets(domain, p.fields, record),
      edited: JSON.stringify(Object.fromEntries(p.fields.map((f, i) => [p.keys[i]!, record[f]]))),
      maxNewTokens: 64,
      subject: String(Object.values(record)[0]),
    }));

    const records = side(`records:${p.domain}`, domain.records, split, (r) => String(Object.values(r)[0]));
    const passages = side(`passages:${p.domain}`, domain.passages, split, (t) => t);
    const singleFields: Candidate[] = side('singleFieldTemplates', d.singleFieldTemplates, split, (t) => t).flatMap(
      (template) =>
        passages.flatMap((passage) =>
          records.flatMap((record) =>
            p.fields.map((f) => ({
              prompt: fill(template, { field: domain.fields[f]!.description, passage: fill(passage, record) }),
              check: { type: 'contains_any', values: [String(record[f])] },
              pristine: `The ${domain.fields[f]!.description} is ${record[f]}.`,
              maxNewTokens: 48,
              stratum: 'single values',
              subject: f,
            })),
          ),
        ),
    );
    const otherQuestions: Candidate[] = side('capitals', facts('capital'), split, (f) => f.subject).map((f) => ({
      prompt: `What is the capital of ${f.subject}?`,
      check: { type: 'contains_any', values: f.aliases },
      pristine: `The capital of ${f.subject} is ${f.answer}.`,
      maxNewTokens: 48,
      stratum: 'other questions',
    }));

    const override: Candidate[] = side('proseInstructions', d.proseInstructions, split, (t) => t).flatMap(
      (instruction) =>
        own.map(({ prompt, record }) => {
          const check: Check = {
            type: 'all',
            checks: [
              { type: 'prose' },
              ...p.fields.map((f): Check => ({ type: 'contains_any', values: [String(record[f])] })),
            ],
          };
          return {
            prompt: fill(instruction, { prompt }),
            check,
            pristine: bullets(domain, p.fields, record),
            maxNewTokens: 64,
            subject: String(Object.values(record)[0]),
          };
        }),
    );
    return { target, preservation: [...singleFields, ...otherQuestions], override };
  },
});
