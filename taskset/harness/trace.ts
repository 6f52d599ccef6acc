// Native traces of one attempt (design.md "Taskset"): `trace.jsonl` holds every request to the editor model and
// every response, tool call and result, one JSON line each, written synchronously as they happen, so a killed run
// keeps all it wrote; `editor.json` is the attempt's summary (config without the key, totals, stop reason).
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Editor tokens, normalised across APIs: input includes cached input; output includes reasoning. */
export type Usage = {
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
};

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({
  input_tokens: 0,
  cached_input_tokens: 0,
  output_tokens: 0,
  reasoning_tokens: 0,
});

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    cached_input_tokens: a.cached_input_tokens + b.cached_input_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
  };
}

/** One line of trace.jsonl; every line also gets `time` (ISO 8601, when it was written). */
export type TraceLine =
  | { type: 'brief'; brief: unknown }
  /** Written before the request is sent; `body` is exactly what goes to the API (or the script's step). */
  | { type: 'request'; turn: number; api: string; body: unknown }
  | {
      type: 'response';
      turn: number;
      duration_ms: number;
      request_id: string | null;
      body: unknown;
      usage: Usage;
      tool_calls: unknown[];
      truncated: boolean;
    }
  /** The request failed after the SDK's retries. */
  | { type: 'error'; turn: number; duration_ms: number; error: unknown }
  | { type: 'turn'; turn: number }
  /** One tool call: the arguments as the editor wrote them, and the result text it got back. */
  | {
      type: 'tool';
      turn: number;
      call_id: string;
      name: string;
      arguments: string;
      duration_ms: number;
      ok: boolean;
      /** The budget that refused the call, when one did. */
      refused_budget?: string;
      output: string;
    }
  | { type: 'stop'; reason: string; error?: string }
  | { type: 'submit'; result: unknown }
  /** Anything a built-in editor wants to record. */
  | { type: 'note'; [key: string]: unknown };

export class Trace {
  readonly file: string;
  private fd: number | undefined;

  /** Starts `dir/trace.jsonl`; refuses a folder that already holds one (one folder per attempt). */
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, 'trace.jsonl');
    try {
      this.fd = openSync(this.file, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST')
        throw new Error(`${this.file} already exists: each attempt needs its own trace folder`);
      throw error;
    }
  }

  write(line: TraceLine): void {
    if (this.fd === undefined) throw new Error(`${this.file} is closed`);
    writeSync(this.fd, JSON.stringify({ time: new Date().toISOString(), ...line }) + '\n');
  }

  /** Writes (or replaces) `dir/editor.json`. */
  summary(data: unknown): void {
    writeFileSync(path.join(this.dir, 'editor.json'), JSON.stringify(data, null, 2) + '\n');
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
