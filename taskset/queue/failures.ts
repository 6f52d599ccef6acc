// Failures by kind. Transient ones (the editor API timing out, refusing for its rate, failing on its side; the
// service unreachable) are thrown back to BullMQ, which retries the job with backoff a bounded number of times;
// anything else (a refused patch, a checker's error, a bug) is deterministic: recorded as the attempt's result.
import type { EditorApiFailureKind, EditorRunResult } from '../harness/index.ts';

/** A failure worth another try: the job is retried (the attempt from its start) and, tries spent, failed with it. */
export class TransientFailure extends Error {
  override name = 'TransientFailure';
}

const TRANSIENT_EDITOR_FAILURES: readonly EditorApiFailureKind[] = ['timeout', 'connection', 'rate_limit', 'server'];
/** Network errors of a request to the service (undici's, or the system's): the service is down or unreachable. */
const UNREACHABLE = [
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_SOCKET',
];

/** Before evaluation: an editor run that ended on a transient API error is not scored but tried again. */
export function throwIfTransientEditorError(run: EditorRunResult): void {
  if (run.stopReason === 'editor_error' && run.failureKind && TRANSIENT_EDITOR_FAILURES.includes(run.failureKind))
    throw new TransientFailure(`the editor API failed (${run.error})`);
}

export function isTransient(error: unknown): boolean {
  if (error instanceof TransientFailure) return true;
  // fetch() rejects with a TypeError whose cause holds the network error's code.
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  return error instanceof TypeError && typeof cause?.code === 'string' && UNREACHABLE.includes(cause.code);
}
