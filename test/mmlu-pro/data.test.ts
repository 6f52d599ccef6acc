// Loading MMLU-Pro from the synthetic files the tests write (fixtures.ts): the dataset's parquet layout and the
// fork's JSON lines per language. Real data is for commands (`--data_dir`); no test needs it.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CATEGORIES,
  examplesByCategory,
  findSplitFiles,
  loadDataset,
  readQuestionFile,
  resolveDataDir,
  selectQuestions,
} from '../../mmlu-pro/data.ts';
import { LANGUAGE_CODES } from '../../mmlu-pro/languages.ts';
import {
  FORK_FILE_SUFFIX,
  jsonLines,
  questions,
  rows,
  SHOTS_PER_CATEGORY,
  TEST_PER_CATEGORY,
  TRANSLATED_PADDING,
} from './fixtures.ts';
import { DATA_DIR, scratchDir } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('loading MMLU-Pro', () => {
  it('reads the test and validation parquet: rows, INT64 ids as numbers, "N/A" dropped, provenance', async () => {
    const data = await loadDataset(DATA_DIR, 'en', true);
    expect(data.test).toEqual(questions('test'));
    expect(data.validation).toEqual(questions('validation'));
    expect(rows('test').some((r) => r.options.includes('N/A'))).toBe(true); // the files do pad
    const counts: Record<string, number> = {};
    for (const q of data.test) counts[q.category] = (counts[q.category] ?? 0) + 1;
    expect(counts).toEqual(Object.fromEntries(CATEGORIES.map((c) => [c, TEST_PER_CATEGORY])));
    const file = path.join(DATA_DIR, 'test-00000-of-00001.parquet');
    expect(data.files.test).toEqual([
      {
        name: 'test-00000-of-00001.parquet',
        path: file,
        sha256: sha256(file),
        rows: CATEGORIES.length * TEST_PER_CATEGORY,
      },
    ]);
    for (const category of CATEGORIES)
      expect(examplesByCategory(data.validation).get(category)).toHaveLength(SHOTS_PER_CATEGORY);
  });

  it('the parquet validation equals the English JSON-lines validation', async () => {
    const parquet = await readQuestionFile(path.join(DATA_DIR, 'validation-00000-of-00001.parquet'), ['N/A']);
    const jsonl = await readQuestionFile(path.join(DATA_DIR, 'MMLU-Pro-Validation-en.json'), ['N/A']);
    expect(jsonl.questions).toEqual(parquet.questions);
  });

  it("finds the file the original opens, MMLU-Pro-Validation-<language>.json, in the fork's case (ID, JA, en, ko, zh)", () => {
    for (const code of LANGUAGE_CODES) {
      const [file] = findSplitFiles(DATA_DIR, 'validation', code);
      expect(path.basename(file!)).toBe(`MMLU-Pro-Validation-${FORK_FILE_SUFFIX[code]}.json`);
    }
    // English without the fork's file: the dataset's parquet.
    expect(findSplitFiles(DATA_DIR, 'test', 'en').map((f) => path.basename(f))).toEqual([
      'test-00000-of-00001.parquet',
    ]);
  });

  it('a missing test file for a language is a clear error', async () => {
    await expect(loadDataset(DATA_DIR, 'ja', true)).rejects.toThrow(
      /no test data for language "ja": looked for MMLU-Pro-Test-ja.json/,
    );
  });

  it('reads a JSON-lines test file of another language (any case of its name), dropping only "N/A"', async () => {
    const dir = path.join(scratch.dir, 'ja');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'MMLU-Pro-Validation-JA.json'), jsonLines(rows('validation', 'ja')));
    writeFileSync(path.join(dir, 'mmlu-pro-test-ja.json'), jsonLines(rows('test', 'ja')));
    expect(rows('test', 'ja').some((r) => r.options.includes(TRANSLATED_PADDING.ja))).toBe(true);
    const data = await loadDataset(dir, 'ja', true);
    expect(data.test).toEqual(questions('test', 'ja'));
    // The original's preprocess drops "N/A" only: the translated padding is an option it shows the model.
    expect(data.test.some((q) => q.options.includes(TRANSLATED_PADDING.ja))).toBe(true);
  });

  it('resolves the Hugging Face cache layout through refs/main', async () => {
    const hub = path.join(scratch.dir, 'hub');
    const repo = path.join(hub, 'datasets--TIGER-Lab--MMLU-Pro');
    const snapshot = path.join(repo, 'snapshots', 'abc123', 'data');
    mkdirSync(snapshot, { recursive: true });
    mkdirSync(path.join(repo, 'refs'));
    writeFileSync(path.join(repo, 'refs', 'main'), 'abc123\n');
    for (const name of ['test-00000-of-00001.parquet', 'validation-00000-of-00001.parquet'])
      symlinkSync(path.join(DATA_DIR, name), path.join(snapshot, name));
    for (const given of [hub, repo]) expect(resolveDataDir(given)).toBe(path.join(repo, 'snapshots', 'abc123'));
    const data = await loadDataset(resolveDataDir(hub), 'en', false);
    expect(data.test).toHaveLength(CATEGORIES.length * TEST_PER_CATEGORY);
    expect(data.validation).toEqual([]);
  });

  it('rejects a bad data folder and a malformed row', async () => {
    expect(() => resolveDataDir(path.join(scratch.dir, 'nowhere'))).toThrow(/is not a folder/);
    const bad = path.join(scratch.dir, 'bad.json');
    writeFileSync(
      bad,
      '{"question_id": 1, "question": "q", "options": ["a"], "answer": "Z", "answer_index": 0, "category": "astrology"}\n',
    );
    await expect(readQuestionFile(bad, [])).rejects.toThrow(
      /row 1: answer is not a letter A-J; row 1: unknown category "astrology"/,
    );
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
    const mathIds = test
      .filter((q) => q.category === 'math')
      .map((q) => q.question_id)
      .sort((x, y) => x - y);
    expect(a.get('math')!.map((q) => q.question_id)).toEqual(mathIds.slice(0, 3));
  });
});
