// The one place the openai SDK is configured, and the one place its errors are read (by class, never by message).
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  UnprocessableEntityError,
} from 'openai';
import type { EditorConfig } from './config.ts';

export function openaiClient(config: EditorConfig): OpenAI {
  return new OpenAI({
    // Without a key (an API on this machine: the editor proxy sets its own), the SDK still wants one to send.
    apiKey: config.apiKey ?? 'no-key-in-this-process',
    baseURL: config.baseUrl,
    // Explicit, though equal to the SDK's defaults (10 minutes; 2 retries on 408/409/429/≥500 and connection
    // errors, with backoff and retry-after): editor.json then records what a run used.
    timeout: config.timeoutMs,
    maxRetries: config.maxRetries,
  });
}

/** A reply the harness cannot use (no choices, a failed response): the editor API's fault, like an HTTP error. */
export class EditorReplyError extends Error {
  override name = 'EditorReplyError';
}

export type EditorApiFailureKind =
  'timeout' | 'connection' | 'rate_limit' | 'auth' | 'request' | 'server' | 'api' | 'reply';
export type EditorApiFailure = { kind: EditorApiFailureKind; status?: number; requestId?: string; message: string };

/**
 * What went wrong with a request to the editor model, after the SDK's retries; undefined when `error` is neither
 * the SDK's nor a bad reply (a bug, or the service's), which the caller must rethrow.
 */
export function editorApiFailure(error: unknown): EditorApiFailure | undefined {
  if (error instanceof EditorReplyError) return { kind: 'reply', message: error.message };
  if (!(error instanceof APIError)) return undefined;
  const base = {
    message: error.message,
    ...(error.status !== undefined ? { status: error.status } : {}),
    ...(error.requestID ? { requestId: error.requestID } : {}),
  };
  return { kind: failureKind(error), ...base };
}

function failureKind(error: APIError): EditorApiFailureKind {
  // Subclasses before their parents: a timeout is a connection error too.
  if (error instanceof APIConnectionTimeoutError) return 'timeout';
  if (error instanceof APIConnectionError) return 'connection';
  if (error instanceof RateLimitError) return 'rate_limit';
  if (error instanceof AuthenticationError || error instanceof PermissionDeniedError) return 'auth';
  if (error instanceof BadRequestError || error instanceof NotFoundError || error instanceof UnprocessableEntityError)
    return 'request';
  if (error instanceof InternalServerError) return 'server';
  return 'api';
}
