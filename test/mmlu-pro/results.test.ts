import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ResultStore, writeJsonAtomic, type ResultRecord } from '../../mmlu-pro/results.ts';
import { scratchDir } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

const record = (question_id: number, pred: string | null = 'A'): ResultRecord => ({
  question_id,
  question: `question ${question_id}`,
  options: ['x', 'y'],
  answer: 'A',
  answer_index: 0,
  cot_content: '',
  category: 'math',
  src: 'test',
  response: `The answer is (${pred})`,
  pred,
});

describe('ResultStore', () => {
  it('journals answers, folds them into a sorted result file, and leaves no journal or temp file', () => {
    const dir = path.join(scratch.dir, 'fold');
    mkdirSync(dir);
    const s = new ResultStore(dir);
    for (const id of [5, 2, 9]) s.append(record(id));
    expect(readFileSync(s.journalPath('math'), 'utf8').trim().split('\n')).toHaveLength(3);
    const records = s.finalize('math');
    expect(records.map((r) => r.question_id)).toEqual([2, 5, 9]);
    expect(JSON.parse(readFileSync(s.resultPath('math'), 'utf8')).map((r: ResultRecord) => r.question_id)).toEqual([
      2, 5, 9,
    ]);
    expect(readdirSync(dir).sort()).toEqual(['math_result.json']);
  });

  it('recovers from a kill: journal lines merged, a torn last line dropped with a warning, no duplicates', () => {
    const dir = path.join(scratch.dir, 'torn');
    mkdirSync(dir);
    writeJsonAtomic(path.join(dir, 'math_result.json'), [record(1), record(2)]);
    const journal = path.join(dir, 'math_result.journal.jsonl');
    appendFileSync(
      journal,
      `${JSON.stringify(record(2, 'B'))}\n${JSON.stringify(record(3))}\n${JSON.stringify(record(4)).slice(0, 40)}`,
    );
    const warnings: string[] = [];
    const answered = new ResultStore(dir, (m) => warnings.push(m)).recover('math');
    expect([...answered.values()].map((r) => [r.question_id, r.pred])).toEqual([
      [1, 'A'],
      [2, 'B'],
      [3, 'A'],
    ]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/math_result.journal.jsonl:3: dropped an unreadable line/);
    expect(existsSync(journal)).toBe(false);
    expect(JSON.parse(readFileSync(path.join(dir, 'math_result.json'), 'utf8'))).toHaveLength(3);
  });

  it('refuses a result file that is not a list of records', () => {
    const dir = path.join(scratch.dir, 'broken');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'law_result.json'), '{"not": "a list"}');
    expect(() => new ResultStore(dir).read('law')).toThrow(/not a JSON array of results/);
    writeFileSync(path.join(dir, 'law_result.json'), '[{"question_id": 1}]');
    expect(() => new ResultStore(dir).read('law')).toThrow(/not a result record/);
  });
});
