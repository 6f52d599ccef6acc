// MMLU-Pro questions from local files only: the fork's JSON-lines files per language (`datasets/`, as the original
// opens them), or the dataset's parquet export (a folder, or the Hugging Face cache layout). No network: a missing
// file is an error naming where we looked.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import type { LanguageCode } from './languages.ts';

/** The 14 categories, in the order of the reference config.toml (and so of the markdown table). */
export const CATEGORIES = [
  'biology',
  'business',
  'chemistry',
  'computer science',
  'economics',
  'engineering',
  'health',
  'history',
  'law',
  'math',
  'philosophy',
  'physics',
  'psychology',
  'other',
] as const;
export type Category = (typeof CATEGORIES)[number];

export function isCategory(value: string): value is Category {
  return (CATEGORIES as readonly string[]).includes(value);
}

/** One row, field names as in the dataset. `options` has the "N/A" padding removed (only that, as the original). */
export type Question = {
  question_id: number;
  question: string;
  options: string[];
  answer: string;
  answer_index: number;
  cot_content: string;
  category: Category;
  src: string;
};

/** Provenance of one loaded file, written into every summary. */
export type DataFile = { name: string; path: string; sha256: string; rows: number };

export type Dataset = {
  test: Question[];
  /** Empty when validation was not asked for (no CoT examples). */
  validation: Question[];
  files: { test: DataFile[]; validation: DataFile[] };
};

const HF_REPO_FOLDER = 'datasets--TIGER-Lab--MMLU-Pro';
const PARQUET_SHARD = (split: string) => new RegExp(`^${split}-\\d+-of-\\d+\\.parquet$`);

function defaultHubCache(): string {
  if (process.env.HF_HUB_CACHE) return process.env.HF_HUB_CACHE;
  if (process.env.HF_HOME) return path.join(process.env.HF_HOME, 'hub');
  return path.join(os.homedir(), '.cache', 'huggingface', 'hub');
}

/** Where the original reads its data: `datasets/` in the working folder. */
export const ORIGINAL_DATA_DIR = 'datasets';

/**
 * The folder that holds the files. `dataDir` may be a plain folder, a Hugging Face hub cache (holding
 * `datasets--TIGER-Lab--MMLU-Pro`), `HF_HOME` (holding `hub/`), or the dataset's cache folder itself; the last
 * three resolve to the snapshot named by `refs/main`. Without `dataDir`: `./datasets` as the original, if there is
 * one, else the Hugging Face cache.
 */
export function resolveDataDir(dataDir?: string): string {
  if (dataDir === undefined && existsSync(ORIGINAL_DATA_DIR) && statSync(ORIGINAL_DATA_DIR).isDirectory())
    return path.resolve(ORIGINAL_DATA_DIR);
  const start = path.resolve(dataDir ?? defaultHubCache());
  for (const repo of [path.join(start, HF_REPO_FOLDER), path.join(start, 'hub', HF_REPO_FOLDER), start]) {
    if (existsSync(path.join(repo, 'snapshots'))) return snapshotOf(repo);
  }
  if (dataDir === undefined) {
    throw new Error(
      `no MMLU-Pro data in the Hugging Face cache (${start}): pass --data_dir with the parquet or JSON-lines files`,
    );
  }
  if (!existsSync(start) || !statSync(start).isDirectory()) throw new Error(`--data_dir ${start} is not a folder`);
  return start;
}

function snapshotOf(repo: string): string {
  const ref = path.join(repo, 'refs', 'main');
  if (existsSync(ref)) {
    const snapshot = path.join(repo, 'snapshots', readFileSync(ref, 'utf8').trim());
    if (!existsSync(snapshot)) throw new Error(`${ref} names a snapshot that is not there: ${snapshot}`);
    return snapshot;
  }
  const snapshots = readdirSync(path.join(repo, 'snapshots'));
  if (snapshots.length !== 1) {
    throw new Error(`${repo}: ${snapshots.length} snapshots and no refs/main; pass the snapshot folder as --data_dir`);
  }
  return path.join(repo, 'snapshots', snapshots[0]!);
}

/**
 * Files of one split for one language, searched in `dir` then `dir/data` (the dataset repo's layout).
 * First the name the original opens, `MMLU-Pro-<Split>-<language>.json`, in any case (the fork ships `-ID` and `-JA`
 * and opens `-id` and `-ja`, which only a case-insensitive file system finds); then, for English, the parquet shards
 * and the unsuffixed `MMLU-Pro-<Split>.json`.
 */
export function findSplitFiles(dir: string, split: 'test' | 'validation', language: LanguageCode): string[] {
  const folders = [dir, path.join(dir, 'data')].filter((f) => existsSync(f) && statSync(f).isDirectory());
  const Split = split === 'test' ? 'Test' : 'Validation';
  const original = `MMLU-Pro-${Split}-${language}.json`;
  const jsonFile = (folder: string, names: string[], wanted: string): string | null => {
    const matches = names.filter((n) => n.toLowerCase() === wanted.toLowerCase());
    if (matches.length > 1) throw new Error(`${folder}: ambiguous ${split} files ${matches.join(', ')}`);
    return matches.length === 1 ? path.join(folder, matches[0]!) : null;
  };
  for (const folder of folders) {
    const names = readdirSync(folder).sort();
    const file = jsonFile(folder, names, original);
    if (file) return [file];
    if (language === 'en') {
      const shards = names.filter((n) => PARQUET_SHARD(split).test(n));
      if (shards.length > 0) return shards.map((n) => path.join(folder, n));
      const unsuffixed = jsonFile(folder, names, `MMLU-Pro-${Split}.json`);
      if (unsuffixed) return [unsuffixed];
    }
  }
  const jsonNames = [original, ...(language === 'en' ? [`MMLU-Pro-${Split}.json`] : [])];
  const wanted = [...(language === 'en' ? [`${split}-*.parquet`] : []), ...jsonNames].join(' or ');
  throw new Error(`no ${split} data for language "${language}": looked for ${wanted} in ${folders.join(', ') || dir}`);
}

/** Reads all requested files; validation only when CoT examples are needed. */
export async function loadDataset(dir: string, language: LanguageCode, withValidation: boolean): Promise<Dataset> {
  const padding = ['N/A'];
  const test = await Promise.all(findSplitFiles(dir, 'test', language).map((f) => readQuestionFile(f, padding)));
  const validation = withValidation
    ? await Promise.all(findSplitFiles(dir, 'validation', language).map((f) => readQuestionFile(f, padding)))
    : [];
  return {
    test: test.flatMap((t) => t.questions),
    validation: validation.flatMap((v) => v.questions),
    files: { test: test.map((t) => t.file), validation: validation.map((v) => v.file) },
  };
}

type LoadedFile = { questions: Question[]; file: DataFile };

// Parsed files by path, padding, size and mtime: a process that runs twice (pristine, then patched; the tests)
// decodes the 12,032-row parquet once. Callers must not mutate the questions.
const loaded = new Map<string, LoadedFile>();

/** One parquet or JSON-lines (or JSON array) file, checked row by row. */
export async function readQuestionFile(file: string, padding: string[]): Promise<LoadedFile> {
  const { size, mtimeMs } = statSync(file);
  const key = JSON.stringify([path.resolve(file), padding, size, mtimeMs]);
  const cached = loaded.get(key);
  if (cached) return cached;
  const result = await parseQuestionFile(file, padding);
  loaded.set(key, result);
  return result;
}

async function parseQuestionFile(file: string, padding: string[]): Promise<LoadedFile> {
  const bytes = readFileSync(file);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const rows = file.endsWith('.parquet') ? await parquetRows(bytes) : jsonRows(bytes.toString('utf8'), file);
  const problems: string[] = [];
  const questions = rows.map((row, i) =>
    toQuestion(row, padding, (message) => problems.push(`row ${i + 1}: ${message}`)),
  );
  if (problems.length > 0) {
    const more = problems.length > 5 ? ` (and ${problems.length - 5} more)` : '';
    throw new Error(`${file}: ${problems.slice(0, 5).join('; ')}${more}`);
  }
  return { questions, file: { name: path.basename(file), path: file, sha256, rows: questions.length } };
}

async function parquetRows(bytes: Buffer): Promise<unknown[]> {
  // hyparquet reads from anything with byteLength + slice: a plain ArrayBuffer of the file will do.
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return parquetReadObjects({ file: buffer });
}

function jsonRows(text: string, file: string): unknown[] {
  if (text.trimStart().startsWith('[')) {
    try {
      return JSON.parse(text) as unknown[];
    } catch (error) {
      throw new Error(`${file}: not a JSON array (${(error as Error).message})`);
    }
  }
  const rows: unknown[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      rows.push(JSON.parse(line));
    } catch (error) {
      throw new Error(`${file}:${i + 1}: not JSON (${(error as Error).message})`);
    }
  });
  return rows;
}

function toQuestion(value: unknown, padding: string[], problem: (m: string) => void): Question {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) problem('not a JSON object');
  const row = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  // INT64 columns arrive as bigint from parquet.
  const integer = (v: unknown) => (typeof v === 'bigint' ? Number(v) : v);
  const id = integer(row.question_id);
  const answerIndex = integer(row.answer_index);
  const options = row.options;
  if (!Number.isInteger(id)) problem('question_id is not an integer');
  if (typeof row.question !== 'string') problem('question is not a string');
  if (!Array.isArray(options) || !options.every((o) => typeof o === 'string'))
    problem('options is not a list of strings');
  if (typeof row.answer !== 'string' || !/^[A-J]$/.test(row.answer)) problem('answer is not a letter A-J');
  if (!Number.isInteger(answerIndex)) problem('answer_index is not an integer');
  if (typeof row.category !== 'string' || !isCategory(row.category))
    problem(`unknown category ${JSON.stringify(row.category)}`);
  return {
    question_id: id as number,
    question: row.question as string,
    options: Array.isArray(options) ? (options as string[]).filter((o) => !padding.includes(o)) : [],
    answer: row.answer as string,
    answer_index: answerIndex as number,
    cot_content: typeof row.cot_content === 'string' ? row.cot_content : '',
    category: row.category as Category,
    src: typeof row.src === 'string' ? row.src : '',
  };
}

/**
 * The questions to ask, per category in the given order. Within a category: ascending question_id, and with
 * `subset` only the first `subset` of them (deterministic, as the reference's "first N per category").
 */
export function selectQuestions(
  test: Question[],
  categories: readonly Category[],
  subset?: number,
): Map<Category, Question[]> {
  const selected = new Map<Category, Question[]>();
  for (const category of categories) {
    const all = test.filter((q) => q.category === category).sort((a, b) => a.question_id - b.question_id);
    selected.set(category, subset === undefined ? all : all.slice(0, subset));
  }
  return selected;
}

/** CoT examples per category, in file order (the reference takes them as they come). */
export function examplesByCategory(validation: Question[]): Map<Category, Question[]> {
  const shots = new Map<Category, Question[]>();
  for (const q of validation) shots.set(q.category, [...(shots.get(q.category) ?? []), q]);
  return shots;
}
