// Errors the proxy answers with, in OpenAI's error shape `{error: {message, type, code, param}}`, so that the
// `openai` client raises its usual classes (BadRequestError, RateLimitError, InternalServerError, ...).
import { APIError } from 'openai';

export class ProxyError extends Error {
  override name = 'ProxyError';

  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
  ) {
    super(message);
  }

  toJSON(): { error: { message: string; type: string; code: string | null; param: string | null } } {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } };
  }
}

/** What an upstream error body says: OpenAI's shape when it has one, else the start of the text. */
export function describeUpstreamError(text: string): {
  message: string;
  type: string | null;
  code: string | null;
  param: string | null;
} {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const error = (parsed as { error?: unknown } | undefined)?.error;
  if (typeof error === 'object' && error !== null && typeof (error as { message?: unknown }).message === 'string') {
    const { message, type, code, param } = error as Record<string, unknown>;
    return {
      message: message as string,
      type: stringOrNull(type),
      code: stringOrNull(code),
      param: stringOrNull(param),
    };
  }
  if (typeof error === 'string') return { message: error, type: null, code: null, param: null };
  const excerpt = text.trim().slice(0, 500);
  return { message: excerpt === '' ? '(empty body)' : excerpt, type: null, code: null, param: null };
}

/** A failure while reading an upstream stream that had already started (so it was not retried). */
export function streamFailure(error: unknown, url: string): ProxyError {
  if (error instanceof ProxyError) return error;
  if (error instanceof APIError) {
    // The openai SSE decoder raises APIError for an `error` event inside the stream.
    const type = stringOrNull(error.type) ?? 'upstream_error';
    return new ProxyError(
      502,
      type,
      `upstream ${url} reported an error mid-stream: ${error.message}`,
      stringOrNull(error.code),
      stringOrNull(error.param),
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ProxyError(
    502,
    'upstream_stream_error',
    `upstream ${url} stream failed: ${message}`,
    'upstream_stream_error',
  );
}

function stringOrNull(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return null;
}
