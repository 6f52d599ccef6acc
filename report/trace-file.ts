// Reading an attempt's native trace (trace.jsonl, taskset/harness/trace.ts) line by line, once: the attempt's page
// shows its entries, and the editor's tokens are summed from the same reading (report-token-efficiency, the
// scoreboard). A trace can hold tens of MB of tool outputs.
import { readFileSync } from 'node:fs';

export const TRACE_FILE = 'trace.jsonl';

/** A JSON object (not null, not an array), as the report reads run files' values. */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** One parsed line of trace.jsonl with its 1-based line number. */
export type TraceEntry = { line: number; type: string; [key: string]: unknown };

export type TraceLines = {
  file: string;
  entries: TraceEntry[];
  /**
   * Lines that are not entries, in order: no JSON (`error`: the parser's message; a run killed mid-write), or no
   * "type".
   */
  skipped: { line: number; error?: string }[];
};

export function readTraceLines(file: string): TraceLines {
  const entries: TraceEntry[] = [];
  const skipped: TraceLines['skipped'] = [];
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, i) => {
      if (text.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (error) {
        skipped.push({ line: i + 1, error: (error as Error).message });
        return;
      }
      if (isObject(value) && typeof value.type === 'string') entries.push({ ...value, line: i + 1, type: value.type });
      else skipped.push({ line: i + 1 });
    });
  return { file, entries, skipped };
}
