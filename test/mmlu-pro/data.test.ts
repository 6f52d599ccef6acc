import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CATEGORIES, examplesByCategory, findSplitFiles, loadDataset, readQuestionFile, resolveDataDir, selectQuestions } from '../../mmlu-pro/data.ts';
import { LANGUAGES, LANGUAGE_CODES } from '../../mmlu-pro/languages.ts';
import { DATA_DIR, scratchDir } from './helpers.ts';

// SOURCES.md: the test counts per category and the files' SHA-256.
const TEST_COUNTS: Record<string, number> = {
  biology: 717, business: 789, chemistry: 1132, 'computer science': 410, economics: 844, engineering: 969, health: 818,
  history: 381, law: 1101, math: 1351, other: 924, philosophy: 499, physics: 1299, psychology: 798,
};
const TEST_SHA256 = '2bd1ae25ec6c21d94ccc6d29be57cd489c4983e376f12531a968f61f666d8e5c';

const scratch = scratchDir();
afterAll(scratch.remove);

describe('loading MMLU-Pro', () => {
  it('reads the test and validation parquet: 12,032 + 70 rows, SOURCES.md counts, provenance', async () => {
    const data = await loadDataset(DATA_DIR, 'en', true);
    expect(data.test).toHaveLength(12_032);
    expect(data.validation).toHaveLength(70);
    const counts: Record<string, number> = {};
    for (const q of data.test) counts[q.category] = (counts[q.category] ?? 0) + 1;
    expect(counts).toEqual(TEST_COUNTS);
    expect(data.files.test).toEqual([{ name: 'test-00000-of-00001.parquet', path: path.join(DATA_DIR, 'test-00000-of-00001.parquet'), sha256: TEST_SHA256, rows: 12_032 }]);
    expect(typeof data.test[0]!.question_id).toBe('number');
    expect(data.validation.some((q) => q.options.includes('N/A'))).toBe(false);
    for (const category of CATEGORIES) expect(examplesByCategory(data.validation).get(category)).toHaveLength(5);
  });

  it('the parquet validation equals the English JSON-lines validation', async () => {
    const parquet = await readQuestionFile(path.join(DATA_DIR, 'validation-00000-of-00001.parquet'), ['N/A']);
    const jsonl = await readQuestionFile(path.join(DATA_DIR, 'MMLU-Pro-Validation-en.json'), ['N/A']);
    expect(jsonl.questions).toEqual(parquet.questions);
  });

  it('finds each language\'s validation file whatever the case of its name (ID, JA, en, ko, zh)', () => {
    for (const code of LANGUAGE_CODES) {
      const [file] = findSplitFiles(DATA_DIR, 'validation', code);
      if (code === 'en') expect(path.basename(file!)).toBe('validation-00000-of-00001.parquet');
      else expect(path.basename(file!)).toBe(`MMLU-Pro-Validation-${LANGUAGES[code].fileSuffix}.json`);
    }
  });

  it('a missing test file for a language is a clear error', async () => {
    await expect(loadDataset(DATA_DIR, 'ja', true)).rejects.toThrow(/no test data for language "ja": looked for MMLU-Pro-Test-JA.json/);
  });

  it('reads a JSON-lines test file of another language, dropping its translated padding', async () => {
    const dir = path.join(scratch.dir, 'ja');
    mkdirSync(dir);
    symlinkSync(path.join(DATA_DIR, 'MMLU-Pro-Validation-JA.json'), path.join(dir, 'MMLU-Pro-Validation-JA.json'));
    symlinkSync(path.join(DATA_DIR, 'MMLU-Pro-Validation-JA.json'), path.join(dir, 'mmlu-pro-test-ja.json'));
    const data = await loadDataset(dir, 'ja', true);
    expect(data.test).toHaveLength(70);
    expect(data.test.find((q) => q.question_id === 2)!.options).toHaveLength(9); // '該当なし' dropped
  });

  it('resolves the Hugging Face cache layout through refs/main', async () => {
    const hub = path.join(scratch.dir, 'hub');
    const repo = path.join(hub, 'datasets--TIGER-Lab--MMLU-Pro');
    const snapshot = path.join(repo, 'snapshots', 'abc123', 'data');
    mkdirSync(snapshot, { recursive: true });
    mkdirSync(path.join(repo, 'refs'));
    writeFileSync(path.join(repo, 'refs', 'main'), 'abc123\n');
    for (const name of ['test-00000-of-00001.parquet', 'validation-00000-of-00001.parquet']) symlinkSync(path.join(DATA_DIR, name), path.join(snapshot, name));
    for (const given of [hub, repo]) expect(resolveDataDir(given)).toBe(path.join(repo, 'snapshots', 'abc123'));
    const data = await loadDataset(resolveDataDir(hub), 'en', false);
    expect(data.test).toHaveLength(12_032);
    expect(data.validation).toEqual([]);
  });

  it('rejects a bad data folder and a malformed row', async () => {
    expect(() => resolveDataDir(path.join(scratch.dir, 'nowhere'))).toThrow(/is not a folder/);
    const bad = path.join(scratch.dir, 'bad.json');
    writeFileSync(bad, '{"question_id": 1, "question": "q", "options": ["a"], "answer": "Z", "answer_index": 0, "category": "astrology"}\n');
    await expect(readQuestionFile(bad, [])).rejects.toThrow(/row 1: answer is not a letter A-J; row 1: unknown category "astrology"/);
    writeFileSync(bad, '{"question_id": 1,\n');
    await expect(readQuestionFile(bad, [])).rejects.toThrow(/bad.json:1: not JSON/);
  });

  it('--subset takes the first N per category by question_id, the same every time', async () => {
    const { test } = await loadDataset(DATA_DIR, 'en', false);
    const shuffled = [...test].reverse();
    const a = selectQuestions(test, ['math', 'law'], 3);
    const b = selectQuestions(shuffled, ['math', 'law'], 3);
    expect([...a.keys()]).toEqual(['math', 'law']);
    expect([...a.values()].flat().map((q) => q.question_id)).toEqual([...b.values()].flat().map((q) => q.question_id));
    const mathIds = test.filter((q) => q.category === 'math').map((q) => q.question_id).sort((x, y) => x - y);
    expect(a.get('math')!.map((q) => q.question_id)).toEqual(mathIds.slice(0, 3));
  });
});
