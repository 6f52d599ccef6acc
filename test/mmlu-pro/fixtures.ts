// MMLU-Pro-format data made by the tests themselves: a small synthetic dataset (no real questions) written as the
// dataset's parquet files (TIGER-Lab's schema: question_id and answer_index INT64, options a LIST of UTF8 strings,
// "N/A" padding to ten options) and as the fork's JSON-lines files per language (padding that the translators
// translated on some rows, which the original keeps as an option; "A: …" CoT).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { CATEGORIES, type Category, type Question } from '../../mmlu-pro/data.ts';
import { LANGUAGES, type LanguageCode } from '../../mmlu-pro/languages.ts';

const LETTERS = 'ABCDEFGHIJ';

/** What the padding reads as in our files per language: translated outside English (the original drops only "N/A"). */
export const TRANSLATED_PADDING: Record<LanguageCode, string> = {
  en: 'N/A',
  id: 'T/A',
  ja: '該当なし',
  ko: '해당 없음',
  zh: '不适用',
};

/** A raw row as the files hold it: options padded with `padding` to ten. */
export type Row = Omit<Question, 'options'> & { options: string[] };

/** Questions per category in the test split, and CoT examples per category in the validation split. */
export const TEST_PER_CATEGORY = 12;
export const SHOTS_PER_CATEGORY = 5;

/** The option count of the i-th question of a category: 3…10, so every count the guess table needs occurs. */
export function optionCountOf(i: number, categoryIndex: number): number {
  return 3 + ((i + categoryIndex) % 8);
}

function row(
  id: number,
  category: Category,
  categoryIndex: number,
  i: number,
  split: 'test' | 'validation',
  language: LanguageCode,
): Row {
  const count = optionCountOf(i, categoryIndex);
  const answerIndex = (i * 7 + categoryIndex * 3) % count;
  const options = Array.from({ length: count }, (_, k) => `${category} ${split} ${i} option ${k + 1}`);
  const padding = TRANSLATED_PADDING[language];
  // Like the real files: options padded to ten with "N/A" on some rows.
  const padded = i % 3 === 0 ? [...options, ...Array(10 - count).fill(padding)] : options;
  return {
    question_id: id,
    question: `Synthetic ${split} question ${i} about ${category} (${language})?`,
    options: padded,
    answer: LETTERS[answerIndex]!,
    answer_index: answerIndex,
    cot_content:
      split === 'validation'
        ? `A: Let's think step by step. Reasoning ${i}. The answer is (${LETTERS[answerIndex]}).`
        : '',
    category,
    src: `synthetic-${split}`,
  };
}

/** Every row of one split, in question_id order, categories interleaved as in the real files' blocks. */
export function rows(split: 'test' | 'validation', language: LanguageCode = 'en'): Row[] {
  const perCategory = split === 'test' ? TEST_PER_CATEGORY : SHOTS_PER_CATEGORY;
  const base = split === 'test' ? 70 : 0;
  return CATEGORIES.flatMap((category, c) =>
    Array.from({ length: perCategory }, (_, i) => row(base + c * perCategory + i, category, c, i, split, language)),
  );
}

/** The rows as the runner sees them: "N/A" dropped, and only that (a translated padding stays, as in the original). */
export function questions(split: 'test' | 'validation', language: LanguageCode = 'en'): Question[] {
  return rows(split, language).map((r) => ({ ...r, options: r.options.filter((o) => o !== 'N/A') }));
}

/** The dataset's parquet schema (as TIGER-Lab's files declare it) and `rows` as one parquet file. */
export function parquetBytes(data: Row[]): Buffer {
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'question_id', data: data.map((r) => BigInt(r.question_id)) },
      { name: 'question', data: data.map((r) => r.question) },
      { name: 'options', data: data.map((r) => r.options) },
      { name: 'answer', data: data.map((r) => r.answer) },
      { name: 'answer_index', data: data.map((r) => BigInt(r.answer_index)) },
      { name: 'cot_content', data: data.map((r) => r.cot_content) },
      { name: 'category', data: data.map((r) => r.category) },
      { name: 'src', data: data.map((r) => r.src) },
    ],
    schema: [
      { name: 'schema', num_children: 8 },
      { name: 'question_id', type: 'INT64', repetition_type: 'OPTIONAL' },
      { name: 'question', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      { name: 'options', converted_type: 'LIST', repetition_type: 'OPTIONAL', num_children: 1 },
      { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
      { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      { name: 'answer', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      { name: 'answer_index', type: 'INT64', repetition_type: 'OPTIONAL' },
      { name: 'cot_content', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      { name: 'category', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
      { name: 'src', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    ],
  });
  return Buffer.from(buffer);
}

/** The fork's JSON lines: one object per line. */
export function jsonLines(data: Row[]): string {
  return data.map((r) => JSON.stringify(r)).join('\n') + '\n';
}

/** The case of the fork's file names (it ships -ID and -JA, and opens -id and -ja). */
export const FORK_FILE_SUFFIX: Record<LanguageCode, string> = { en: 'en', id: 'ID', ja: 'JA', ko: 'ko', zh: 'zh' };

/**
 * A data folder as the runner expects one: `test-00000-of-00001.parquet`, `validation-00000-of-00001.parquet`, and
 * the fork's `MMLU-Pro-Validation-<suffix>.json` for all five languages. Returns the folder.
 */
export function writeDataDir(dir: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'test-00000-of-00001.parquet'), parquetBytes(rows('test')));
  writeFileSync(path.join(dir, 'validation-00000-of-00001.parquet'), parquetBytes(rows('validation')));
  for (const language of Object.values(LANGUAGES)) {
    writeFileSync(
      path.join(dir, `MMLU-Pro-Validation-${FORK_FILE_SUFFIX[language.code]}.json`),
      jsonLines(rows('validation', language.code)),
    );
  }
  return dir;
}
