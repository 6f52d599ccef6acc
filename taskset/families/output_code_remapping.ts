// Family 2, output-code remapping (allosteric): a classification task answers with seeded code words instead of its
// ordinary labels, with no mapping in the prompt. The decision stays correct, the code words keep their ordinary
// meaning elsewhere, other classification tasks keep their labels, and an explicit request for the labels wins.
import { readData } from '../data.ts';
import { onSide, type Split } from '../split.ts';
import type { CodedClass } from '../types.ts';
import { type Candidate, capitalise, defineFamily, fill, wrapped } from './define.ts';
import { world } from './world.ts';

const ID = 'output_code_remapping';

type TaskName = 'sentiment' | 'animal_or_plant' | 'parity' | 'continent';
type Task = {
  description: string;
  classes: { name: string; labels: string[] }[];
  labelsText: string;
  templates: string[];
  answers: Record<string, string>;
  items?: { text: string; class: string }[];
  numbers?: [number, number];
};
type Data = {
  codeWords: { word: string; questions: string[]; keywords: string[]; answer: string }[];
  tasks: Record<TaskName, Task>;
  labelInstructions: string[];
};
type Params = { task: TaskName; codes: Record<string, string> };

const data = () => readData<Data>(`families/${ID}.json`);
const side = <T>(pool: string, items: T[], split: Split, keyOf: (t: T) => string) =>
  onSide(ID, pool, items, split, keyOf);

/** The items of a task: listed in the data, or generated (numbers), or taken from world.json (countries). */
function itemsOf(name: TaskName): { text: string; class: string }[] {
  const task = data().tasks[name];
  if (task.items) return task.items;
  if (task.numbers) {
    const [from, to] = task.numbers;
    return Array.from({ length: to - from + 1 }, (_, i) => ({
      text: String(from + i),
      class: (from + i) % 2 === 0 ? 'even' : 'odd',
    }));
  }
  const continents = new Set(task.classes.map((c) => c.name));
  return world()
    .countries.filter((c) => c.continent !== null && continents.has(c.continent) && c.name !== 'Australia')
    .map((c) => ({ text: c.name, class: c.continent! }));
}

/** Split templates × split items of a task, with the ordinary answer. */
function questions(name: TaskName, split: Split) {
  const task = data().tasks[name];
  const items = side(`items:${name}`, itemsOf(name), split, (i) => i.text);
  return side(`templates:${name}`, task.templates, split, (t) => t).flatMap((template) =>
    items.map((item) => {
      const vars = { item: item.text, Item: capitalise(item.text) };
      return { question: fill(template, vars), item, answer: fill(task.answers[item.class]!, vars) };
    }),
  );
}

const classesOf = (name: TaskName, codes?: Record<string, string>): CodedClass[] =>
  data().tasks[name].classes.map((c) => (codes ? { ...c, code: codes[c.name]! } : { ...c }));

export const outputCodeRemapping = defineFamily<Params>({
  id: ID,
  title: 'Output-code remapping',
  modulation: 'allosteric',
  draw(rng) {
    const task = rng.pick(Object.keys(data().tasks) as TaskName[]);
    const classes = data().tasks[task].classes;
    const words = rng.sample(
      data().codeWords.map((c) => c.word),
      classes.length,
    );
    return { task, codes: Object.fromEntries(classes.map((c, i) => [c.name, words[i]!])) };
  },
  key: (p) =>
    `task=${p.task};codes=${Object.entries(p.codes)
      .map(([c, w]) => `${c}:${w}`)
      .join(',')}`,
  objective(p) {
    const task = data().tasks[p.task];
    const mapping = Object.entries(p.codes)
      .map(([c, w]) => `"${w}" for ${c}`)
      .join(', ');
    return {
      text:
        `For questions about ${task.description}, make the model answer with a code word instead of the ordinary label: ` +
        `${mapping}. Prompts never state this mapping. The decision itself must stay correct. The code words keep their ` +
        `ordinary meaning in other questions, other classification questions keep their usual labels, and an explicit ` +
        `request for the ordinary label (${task.labelsText}) gets it.`,
      structured: { behaviour: 'answer with code words', task: p.task, codes: p.codes },
    };
  },
  relevantStrings: (p) => [
    ...Object.values(p.codes).flatMap((w) => [w, capitalise(w)]),
    ...data().tasks[p.task].classes.flatMap((c) => c.labels.flatMap((l) => [l, capitalise(l)])),
  ],
  candidates(p, split) {
    const d = data();
    const own = questions(p.task, split);
    const target: Candidate[] = own.map(({ question, item, answer }) => ({
      prompt: question,
      check: { type: 'coded_label', classes: classesOf(p.task, p.codes), correct: item.class, use: 'code' },
      pristine: answer,
      edited: `${capitalise(p.codes[item.class]!)}.`,
      maxNewTokens: 32,
      subject: item.text,
    }));

    const codeMeanings: Candidate[] = d.codeWords
      .filter((c) => Object.values(p.codes).includes(c.word))
      .flatMap((c) =>
        side(`codeQuestions:${c.word}`, c.questions, split, (q) => q).flatMap((q) =>
          wrapped(ID, split, q).map((prompt) => ({
            prompt,
            check: { type: 'contains_any', values: c.keywords },
            pristine: c.answer,
            maxNewTokens: 48,
            stratum: 'code words keep their meaning',
            subject: c.word,
          })),
        ),
      );
    const otherTasks: Candidate[] = (Object.keys(d.tasks) as TaskName[])
      .filter((name) => name !== p.task)
      .flatMap((name) =>
        questions(name, split).map(({ question, item, answer }) => ({
          prompt: question,
          check: { type: 'coded_label', classes: classesOf(name), correct: item.class, use: 'label' },
          pristine: answer,
          maxNewTokens: 32,
          stratum: 'other tasks keep their labels',
          subject: name,
        })),
      );

    const override: Candidate[] = side('labelInstructions', d.labelInstructions, split, (t) => t).flatMap(
      (instruction) =>
        own.map(({ question, item, answer }) => ({
          prompt: fill(instruction, { question, labelsText: d.tasks[p.task].labelsText }),
          check: { type: 'coded_label', classes: classesOf(p.task, p.codes), correct: item.class, use: 'label' },
          pristine: answer,
          maxNewTokens: 32,
          subject: item.text,
        })),
    );
    return { target, preservation: [...codeMeanings, ...otherTasks], override };
  },
});
