import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it, expect } from 'vitest';

interface AnswerSet {
  answer: string;
  aliases: string[];
}
interface QA extends AnswerSet {
  question: string;
}
interface Change {
  id: string;
  subject: string;
  relation: string;
  office: string;
  question_templates: string[];
  old: AnswerSet;
  new: AnswerSet;
  changed_on: string;
  source: string;
  other_attributes: QA[];
  history_questions: QA[];
}
interface StableFact extends QA {
  id: string;
  category: string;
}
interface FactsFile {
  version: string;
  reference_date: string;
  description: string;
  changes: Change[];
  stable: StableFact[];
}

const here = path.dirname(fileURLToPath(import.meta.url));
const file = path.resolve(here, '../../data/facts.json');
const facts = JSON.parse(fs.readFileSync(file, 'utf8')) as FactsFile;

const RELATIONS = new Set([
  'head_of_government',
  'head_of_state',
  'leader_of_organisation',
  'ceo',
  'party_leader',
  'office_holder',
]);
const EARLIEST_EXCLUSIVE = '2024-07-01';
const REFERENCE_DATE = '2026-03-01';

const norm = (s: string): string => s.normalize('NFKC').toLowerCase().trim();

function isIsoDate(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Whole-word, case-insensitive match of `needle` inside `hay` (how a grader matches aliases). */
function wordMatch(hay: string, needle: string): boolean {
  const re = new RegExp(`(?<![\\p{L}\\p{N}])${escapeRegExp(norm(needle))}(?![\\p{L}\\p{N}])`, 'u');
  return re.test(norm(hay));
}

function checkAnswerSet(where: string, a: AnswerSet): void {
  expect(typeof a.answer, `${where}: answer`).toBe('string');
  expect(a.answer.trim().length, `${where}: answer empty`).toBeGreaterThan(0);
  expect(Array.isArray(a.aliases), `${where}: aliases`).toBe(true);
  expect(a.aliases, `${where}: answer among aliases`).toContain(a.answer);
  for (const al of a.aliases) expect(al.trim().length, `${where}: empty alias`).toBeGreaterThan(0);
  const lowered = a.aliases.map(norm);
  expect(new Set(lowered).size, `${where}: duplicate aliases`).toBe(lowered.length);
}

function checkQA(where: string, qa: QA): void {
  expect(typeof qa.question, `${where}: question`).toBe('string');
  expect(qa.question.trim().length, `${where}: question empty`).toBeGreaterThan(0);
  checkAnswerSet(where, qa);
}

describe('data/facts.json', () => {
  it('has the expected header', () => {
    expect(facts.version).toBe('0.2.2');
    expect(facts.reference_date).toBe(REFERENCE_DATE);
    expect(facts.description.length).toBeGreaterThan(0);
  });

  it('has at least 40 changes with unique ids', () => {
    expect(facts.changes.length).toBeGreaterThanOrEqual(40);
    const ids = facts.changes.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
  });

  it('every change has the fields the taskset reads', () => {
    for (const c of facts.changes) {
      expect(c.subject.trim().length, c.id).toBeGreaterThan(0);
      expect(c.office.trim().length, c.id).toBeGreaterThan(0);
      expect(RELATIONS.has(c.relation), `${c.id}: relation ${c.relation}`).toBe(true);
    }
  });

  it('every change date is a valid ISO date after 2024-07-01 and on or before 2026-03-01', () => {
    for (const c of facts.changes) {
      expect(isIsoDate(c.changed_on), `${c.id}: ${c.changed_on}`).toBe(true);
      expect(c.changed_on > EARLIEST_EXCLUSIVE, `${c.id}: ${c.changed_on} too early`).toBe(true);
      expect(c.changed_on <= REFERENCE_DATE, `${c.id}: ${c.changed_on} too late`).toBe(true);
    }
  });

  it('every source is an https URL', () => {
    for (const c of facts.changes) {
      const u = new URL(c.source);
      expect(u.protocol, c.id).toBe('https:');
      expect(u.hostname.length, c.id).toBeGreaterThan(0);
    }
  });

  it('old and new answers are well-formed, and each is among its own aliases', () => {
    for (const c of facts.changes) {
      checkAnswerSet(`${c.id}.old`, c.old);
      checkAnswerSet(`${c.id}.new`, c.new);
    }
  });

  it('old and new aliases are disjoint and no alias matches the other side', () => {
    for (const c of facts.changes) {
      const oldSet = new Set(c.old.aliases.map(norm));
      for (const n of c.new.aliases) expect(oldSet.has(norm(n)), `${c.id}: shared alias ${n}`).toBe(false);
      for (const o of c.old.aliases) {
        for (const n of c.new.aliases) {
          expect(wordMatch(n, o), `${c.id}: old alias "${o}" matches new alias "${n}"`).toBe(false);
          expect(wordMatch(o, n), `${c.id}: new alias "${n}" matches old alias "${o}"`).toBe(false);
        }
      }
    }
  });

  it('has at least 8 distinct templates per change, none containing an old or new alias', () => {
    for (const c of facts.changes) {
      expect(c.question_templates.length, c.id).toBeGreaterThanOrEqual(8);
      const lowered = c.question_templates.map(norm);
      expect(new Set(lowered).size, `${c.id}: duplicate templates`).toBe(lowered.length);
      for (const t of c.question_templates) {
        expect(t.trim().length, c.id).toBeGreaterThan(0);
        for (const al of [...c.old.aliases, ...c.new.aliases]) {
          expect(norm(t).includes(norm(al)), `${c.id}: template "${t}" contains alias "${al}"`).toBe(false);
        }
      }
    }
  });

  it('has at least 3 other attributes and 2 history questions per change', () => {
    for (const c of facts.changes) {
      expect(c.other_attributes.length, c.id).toBeGreaterThanOrEqual(3);
      expect(c.history_questions.length, c.id).toBeGreaterThanOrEqual(2);
      c.other_attributes.forEach((qa, i) => checkQA(`${c.id}.other_attributes[${i}]`, qa));
      c.history_questions.forEach((qa, i) => checkQA(`${c.id}.history_questions[${i}]`, qa));
      const qs = [...c.other_attributes, ...c.history_questions].map((qa) => norm(qa.question));
      expect(new Set(qs).size, `${c.id}: repeated preservation question`).toBe(qs.length);
    }
  });

  it('preservation questions are not themselves templates of the change', () => {
    for (const c of facts.changes) {
      const templates = new Set(c.question_templates.map(norm));
      for (const qa of [...c.other_attributes, ...c.history_questions]) {
        expect(templates.has(norm(qa.question)), `${c.id}: ${qa.question}`).toBe(false);
      }
    }
  });

  it('has at least 150 stable facts with unique ids and questions', () => {
    expect(facts.stable.length).toBeGreaterThanOrEqual(150);
    const ids = facts.stable.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    const qs = facts.stable.map((s) => norm(s.question));
    expect(new Set(qs).size).toBe(qs.length);
    for (const s of facts.stable) {
      expect(s.id).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
      expect(s.category.trim().length, s.id).toBeGreaterThan(0);
      checkQA(`stable.${s.id}`, s);
    }
  });
});
