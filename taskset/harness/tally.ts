// How the editor's part of an episode is counted, once, for the loop (run.ts) and the built-ins (builtin-editors.ts)
// alike: turns the service counted, tool calls answered (refused ones included), those answered with an error and
// those a budget refused (per tool), the editor API's usage, and how it ended.
import type { EditorApiFailureKind } from './client.ts';
import { addUsage, ZERO_USAGE, type Usage } from './trace.ts';

export type StopReason = 'final_reply' | 'turn_limit' | 'budget' | 'editor_error';
/**
 * The editor API's part of an attempt, counted as report-token-efficiency counts a trace: `requests` sent (each trace
 * line `request`), `failed_requests` among them answered with an error after the SDK's retries (each line `error`),
 * and the tokens of the responses.
 */
export type EditorUsage = Usage & { requests: number; failed_requests: number };

/** How the editor's part ended, before the submit. */
export type Ending = {
  stopReason: StopReason;
  /** Turns taken; each one was counted by the service. */
  turns: number;
  /** Tool calls answered, refused ones included (calls after a budget refusal are not run). */
  toolCalls: number;
  /** Tool calls answered with an error. */
  toolErrors: number;
  /** Tool calls a budget refused, per tool (refusals among toolErrors). */
  refusedCalls: Record<string, number>;
  usage: EditorUsage;
  /** The text of the reply without a tool call ('final_reply'). */
  finalReply?: string;
  /** What failed ('editor_error'). */
  error?: string;
  /** Its kind, read from the SDK's error class ('editor_error'): a queue worker retries the transient ones. */
  failureKind?: EditorApiFailureKind;
};

export class Tally {
  turns = 0;
  toolCalls = 0;
  toolErrors = 0;
  refusedCalls: Record<string, number> = {};
  usage: EditorUsage = { ...ZERO_USAGE, requests: 0, failed_requests: 0 };

  /** A turn the service counted; returns its number (from 1). */
  turn(): number {
    return ++this.turns;
  }

  /** A tool call sent; returns its number (from 1). */
  toolCall(): number {
    return ++this.toolCalls;
  }

  /** The last tool call was answered with an error. */
  toolError(): void {
    this.toolErrors++;
  }

  /** The last tool call, to `tool`, was refused by a budget. */
  refused(tool: string): void {
    this.refusedCalls[tool] = (this.refusedCalls[tool] ?? 0) + 1;
  }

  /** One request to the editor's API, answered, and the usage it reported. */
  request(usage: Usage): void {
    this.usage = { ...this.usage, ...addUsage(this.usage, usage), requests: this.usage.requests + 1 };
  }

  /** One request to the editor's API answered with an error (after the SDK's retries). */
  failedRequest(): void {
    this.usage = {
      ...this.usage,
      requests: this.usage.requests + 1,
      failed_requests: this.usage.failed_requests + 1,
    };
  }

  end(stopReason: StopReason, extra: Pick<Ending, 'finalReply' | 'error' | 'failureKind'> = {}): Ending {
    return {
      stopReason,
      turns: this.turns,
      toolCalls: this.toolCalls,
      toolErrors: this.toolErrors,
      refusedCalls: { ...this.refusedCalls },
      usage: this.usage,
      ...extra,
    };
  }
}
