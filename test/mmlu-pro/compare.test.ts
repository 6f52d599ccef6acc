import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareFolders, comparisonTable, pairedScore } from '../../mmlu-pro/compare.ts';
import { loadDataset, selectQuestions, type Question } from '../../mmlu-pro/data.ts';
import { startFakeServer, type FakeServer } from '../../mmlu-pro/fake-server.ts';
import { runMmluPro } from '../../mmlu-pro/runner.ts';
import { DATA_DIR, scratchDir, testConfig } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

let math: Question[] = [];
let law: Question[] = [];
const A = path.join(scratch.dir, 'pristine');
const B = path.join(scratch.dir, 'patched');

let server: FakeServer;
let isRight: (q: Question) => boolean = () => true;

/** Runs `categories` against the fake server, right on exactly the questions `rightOn` picks. */
async function runWith(out: string, categories: string, subset: number, rightOn: (q: Question) => boolean) {
  isRight = rightOn;
  await runMmluPro(testConfig(server.url, out, { category: categories, subset, parallel: 4 }));
}

beforeAll(async () => {
  const { test } = await loadDataset(DATA_DIR, 'en', false);
  const selected = selectQuestions(test, ['math', 'law'], 10);
  math = selected.get('math')!;
  law = selected.get('law')!;
  server = await startFakeServer((r) => {
    const q = [...math, ...law].find((s) => s.question === r.question)!;
    const letter = isRight(q) ? q.answer : 'ABCDEFGHIJ'[(q.answer_index + 1) % q.options.length];
    return { content: `The answer is (${letter}).` };
  });
  // A (pristine): wrong on math 0-1. B (patched): wrong on math 2-6, and has two more law questions than A.
  await runWith(A, 'math,law', 8, (q) => !math.slice(0, 2).includes(q));
  await runWith(B, 'math,law', 8, (q) => !math.slice(2, 7).includes(q));
  await runWith(B, 'law', 10, () => true);
});

afterAll(async () => {
  await server?.close();
});

describe('compare', () => {
  it("per category: paired accuracies, the difference B − A and McNemar's exact p on the discordant pairs", () => {
    const c = compareFolders(A, B);
    expect(c.categories.map((s) => s.category)).toEqual(['law', 'math']);
    const mathScore = c.categories.find((s) => s.category === 'math')!;
    expect(mathScore).toMatchObject({
      paired: 8,
      a_correct: 6,
      b_correct: 3,
      a_only_correct: 5,
      b_only_correct: 2,
      unpaired_a: 0,
      unpaired_b: 0,
    });
    expect(mathScore.difference).toBeCloseTo(-3 / 8, 12);
    expect(mathScore.p_value).toBeCloseTo(58 / 128, 12); // 2·(C(7,0)+C(7,1)+C(7,2))/2^7
    const lawScore = c.categories.find((s) => s.category === 'law')!;
    expect(lawScore).toMatchObject({
      paired: 8,
      a_correct: 8,
      b_correct: 8,
      difference: 0,
      p_value: 1,
      unpaired_a: 0,
      unpaired_b: 2,
    });
    expect(c.overall).toMatchObject({
      paired: 16,
      a_correct: 14,
      b_correct: 11,
      a_only_correct: 5,
      b_only_correct: 2,
      unpaired_b: 2,
    });
    expect(c.settings_differences).toEqual([]);
    expect(comparisonTable(c)).toContain('| math | 8 | 75.00 | 37.50 | -37.50 | 5 | 2 | 0.453 |');
  });

  it('pairs questions by id and text only', () => {
    const a = new Map([
      ['1\u0000q', true],
      ['2\u0000q', false],
      ['3\u0000q', true],
    ]);
    const b = new Map([
      ['1\u0000q', false],
      ['2\u0000q', true],
      ['4\u0000q', true],
    ]);
    expect(pairedScore('x', a, b)).toMatchObject({
      paired: 2,
      a_only_correct: 1,
      b_only_correct: 1,
      unpaired_a: 1,
      unpaired_b: 1,
      p_value: 1,
    });
  });

  it('rejects a folder without results', () => {
    expect(() => compareFolders(A, scratch.dir)).toThrow(/no <category>_result.json/);
    expect(() => compareFolders(A, path.join(scratch.dir, 'missing'))).toThrow(/is not a folder/);
  });
});
