// Typed access to data/facts.json (written and audited separately: data/FACTS.md).
import { readData } from '../data.ts';

export type Answer = { answer: string; aliases: string[] };
export type QA = { question: string; answer: string; aliases: string[] };
export type Change = {
  id: string;
  subject: string;
  relation: string;
  office: string;
  question_templates: string[];
  old: Answer;
  new: Answer;
  changed_on: string;
  source: string;
  other_attributes: QA[];
  history_questions: QA[];
};
export type StableFact = { id: string; category: string; question: string; answer: string; aliases: string[] };
export type Facts = { version: string; reference_date: string; changes: Change[]; stable: StableFact[] };

/** facts.json carries its own version and reference date; the taskset reads it as it is. */
export const factsFile = (): Facts => readData<Facts>('facts.json', { versioned: false });

export function changeById(id: string): Change {
  const change = factsFile().changes.find((c) => c.id === id);
  if (!change) throw new Error(`data/facts.json: no change "${id}"`);
  return change;
}
