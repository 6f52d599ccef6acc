// Answers on disk, so that a killed run loses nothing and a rerun skips what is answered.
// - `<category>_result.json`: the original's file, a JSON array of records (question fields, prompt if log_prompt,
//   response, pred) in its bytes (json.dumps(indent="\t"), python.ts), sorted by question_id (the original's order is
//   that in which answers came back). Always replaced atomically: temp file in the same folder, fsync, rename.
// - `<category>_result.journal.jsonl`: while a run is going, each answer is appended as one line with one write()
//   call, which a killed process cannot tear; rewriting the whole array per answer would cost O(n²) bytes.
//   The next run (or the end of this one) folds the journal into the result file and deletes it.
import { closeSync, existsSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Question } from './data.ts';
import type { ChatMessage } from '../core/chat.ts';
import { writeFileAtomic } from '../core/files.ts';
import { pythonJson } from './python.ts';

export type ResultRecord = Question & {
  /** Present when log_prompt is on: the chat messages, or the completion text (no_chat), as the reference logs it. */
  prompt?: ChatMessage[] | string;
  response: string;
  pred: string | null;
};

/** Resume identity, as the reference's: the same question_id and the same question text. */
export function questionKey(q: { question_id: number; question: string }): string {
  return `${q.question_id}\u0000${q.question}`;
}

export function resultFileName(category: string): string {
  return `${category}_result.json`;
}

/** Atomic writes (temp file, fsync, rename): the project's one implementation. */
export { writeFileAtomic };

/** Our own JSON files (run.json, summary.json): tab-indented, one trailing newline. */
export function writeJsonAtomic(file: string, value: unknown): void {
  writeFileAtomic(file, `${JSON.stringify(value, null, '\t')}\n`);
}

/** `<category>_result.json` in the original's bytes. */
export function writeResultFile(file: string, records: ResultRecord[]): void {
  writeFileAtomic(file, pythonJson(records));
}

export class ResultStore {
  private readonly journals = new Map<string, number>();

  /** `warn` hears about journal lines dropped because a kill tore them. */
  constructor(
    readonly dir: string,
    private readonly warn: (message: string) => void = () => {},
  ) {}

  /** Every answered record of a category (result file plus journal), one per question; read-only. */
  read(category: string): ResultRecord[] {
    const byKey = new Map<string, ResultRecord>();
    for (const record of [...this.readResultFile(category), ...this.readJournal(category)])
      byKey.set(questionKey(record), record);
    return sortRecords([...byKey.values()]);
  }

  /** Folds a journal left by a killed run into the result file, then returns the records by question key. */
  recover(category: string): Map<string, ResultRecord> {
    const records = this.read(category);
    if (existsSync(this.journalPath(category))) {
      writeResultFile(this.resultPath(category), records);
      rmSync(this.journalPath(category));
    }
    return new Map(records.map((r) => [questionKey(r), r]));
  }

  /** Records one answer so that a killed process keeps it: one write() of one line (no fsync per answer). */
  append(record: ResultRecord): void {
    let fd = this.journals.get(record.category);
    if (fd === undefined) {
      fd = openSync(this.journalPath(record.category), 'a');
      this.journals.set(record.category, fd);
    }
    writeSync(fd, `${JSON.stringify(record)}\n`);
  }

  /** Writes the result file from everything answered so far and drops the journal. */
  finalize(category: string): ResultRecord[] {
    const fd = this.journals.get(category);
    if (fd !== undefined) {
      closeSync(fd);
      this.journals.delete(category);
    }
    const records = this.read(category);
    if (records.length > 0 || existsSync(this.resultPath(category)))
      writeResultFile(this.resultPath(category), records);
    rmSync(this.journalPath(category), { force: true });
    return records;
  }

  resultPath(category: string): string {
    return path.join(this.dir, resultFileName(category));
  }

  journalPath(category: string): string {
    return path.join(this.dir, `${category}_result.journal.jsonl`);
  }

  private readResultFile(category: string): ResultRecord[] {
    const file = this.resultPath(category);
    if (!existsSync(file)) return [];
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new Error(
        `${file} is not valid JSON (${(error as Error).message}); move it away to start this category afresh`,
      );
    }
    if (!Array.isArray(value)) throw new Error(`${file} is not a JSON array of results`);
    value.forEach((record, i) => checkRecord(record, `${file} [${i}]`));
    return value as ResultRecord[];
  }

  private readJournal(category: string): ResultRecord[] {
    const file = this.journalPath(category);
    if (!existsSync(file)) return [];
    const records: ResultRecord[] = [];
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (line === '') return;
      try {
        const record = JSON.parse(line) as unknown;
        checkRecord(record, `${file}:${i + 1}`);
        records.push(record as ResultRecord);
      } catch {
        this.warn(
          `${file}:${i + 1}: dropped an unreadable line (a kill while writing it); that question will be asked again`,
        );
      }
    });
    return records;
  }
}

function checkRecord(record: unknown, where: string): void {
  const r = record as Partial<ResultRecord> | null;
  const ok =
    typeof r === 'object' &&
    r !== null &&
    Number.isInteger(r.question_id) &&
    typeof r.question === 'string' &&
    Array.isArray(r.options) &&
    typeof r.answer === 'string' &&
    Number.isInteger(r.answer_index) &&
    typeof r.category === 'string' &&
    (r.pred === null || typeof r.pred === 'string');
  if (!ok)
    throw new Error(
      `${where}: not a result record (needs question_id, question, options, answer, answer_index, category, pred)`,
    );
}

function sortRecords(records: ResultRecord[]): ResultRecord[] {
  return records.sort(
    (a, b) => a.question_id - b.question_id || (a.question < b.question ? -1 : a.question > b.question ? 1 : 0),
  );
}
