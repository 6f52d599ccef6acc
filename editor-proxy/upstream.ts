// Calls to the upstream API: Node's built-in fetch (undici) with an idle timeout, and retries with exponential
// backoff plus jitter on 429/5xx and connection failures (the policy openai-node documents, applied here once).
// A successful streamed response is handed back as soon as its headers arrive and is never retried after that.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { ProxyError, describeUpstreamError } from './errors.ts';

/** Statuses worth another try: rate limits and server-side failures. */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);
const MAX_RETRY_AFTER_MS = 60_000; // a longer `retry-after` is ignored in favour of our own backoff (openai-node does the same)
const MAX_BACKOFF_MS = 8_000;

export interface UpstreamConfig {
  /** Base URL without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Longest wait for the upstream's next byte (headers or body), in ms. */
  timeoutMs: number;
  /** Tries after the first one. */
  maxRetries: number;
  /** First backoff delay in ms; doubles per retry, capped at 8 s, minus up to 25 % jitter. */
  retryBaseDelayMs: number;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /** Path and query after the base URL, e.g. `/chat/completions`. */
  path: string;
  body?: unknown;
  /** Client headers to pass on (never Authorization: the proxy sets its own). */
  headers: Record<string, string>;
  /** Hand back a successful body as a stream instead of reading it whole (error bodies are always read). */
  stream: boolean;
  /** Aborts when the client goes away. */
  signal: AbortSignal;
}

export type UpstreamReply =
  | { status: number; headers: Headers; text: string }
  | { status: number; headers: Headers; stream: ReadableStream<Uint8Array> };

/** One upstream exchange, retried per the policy above; any non-2xx answer in the end is thrown as a ProxyError. */
export async function callUpstream(
  config: UpstreamConfig,
  request: UpstreamRequest,
  log: FastifyBaseLogger,
): Promise<UpstreamReply> {
  const url = config.baseUrl + request.path;
  const init = {
    method: request.method,
    headers: {
      ...request.headers,
      authorization: `Bearer ${config.apiKey}`,
      ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: request.body === undefined ? undefined : JSON.stringify(request.body),
  };
  for (let attempt = 1; ; attempt++) {
    const deadline = idleDeadline(
      config.timeoutMs,
      `upstream ${url} sent nothing for ${config.timeoutMs} ms (timeout; not retried)`,
    );
    let failure: ProxyError;
    let retryable: boolean;
    let retryAfterMs: number | undefined;
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.any([deadline.signal, request.signal]) });
      const body = deadline.guard(response.body ?? new ReadableStream());
      if (response.ok && request.stream) return { status: response.status, headers: response.headers, stream: body };
      const text = await new Response(body).text();
      if (response.ok) return { status: response.status, headers: response.headers, text };
      failure = answeredWithError(url, response.status, text, attempt);
      retryable = RETRY_STATUSES.has(response.status);
      retryAfterMs = parseRetryAfter(response.headers);
    } catch (error) {
      deadline.clear();
      if (error instanceof ProxyError || request.signal.aborted) throw error; // the timeout, or the client left
      const cause =
        error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error); // fetch hides the socket error in `cause`
      failure = new ProxyError(
        502,
        'upstream_connection_error',
        `could not reach upstream ${url}: ${cause}${gaveUp(attempt)}`,
        'upstream_unreachable',
      );
      retryable = true;
    }
    if (!retryable || attempt > config.maxRetries) throw failure;
    const delayMs = retryAfterMs ?? backoffMs(attempt, config.retryBaseDelayMs);
    log.warn({ url, status: failure.status, attempt, delayMs }, 'upstream failed; retrying');
    await sleep(delayMs, undefined, { signal: request.signal });
  }
}

/** The upstream's own error, kept in its type/code/param so the client's error classes still apply. */
function answeredWithError(url: string, status: number, text: string, attempt: number): ProxyError {
  const upstream = describeUpstreamError(text);
  return new ProxyError(
    status,
    upstream.type ?? 'upstream_error',
    `upstream ${url} answered ${status}: ${upstream.message}${gaveUp(attempt)}`,
    upstream.code,
    upstream.param,
  );
}

/** Only a final message is shown; it says how many tries it took. */
function gaveUp(attempt: number): string {
  return attempt > 1 ? ` (gave up after ${attempt} attempts)` : '';
}

/** `retry-after-ms` (openai's) or `retry-after` (seconds or an HTTP date); undefined when absent or too long. */
export function parseRetryAfter(headers: Headers, now = Date.now()): number | undefined {
  const millis = Number(headers.get('retry-after-ms') ?? Number.NaN);
  const after = headers.get('retry-after');
  let delayMs = Number.isFinite(millis) ? millis : undefined;
  if (delayMs === undefined && after !== null) {
    const seconds = Number(after);
    delayMs = after.trim() !== '' && Number.isFinite(seconds) ? seconds * 1000 : Date.parse(after) - now;
  }
  return delayMs !== undefined && Number.isFinite(delayMs) && delayMs >= 0 && delayMs <= MAX_RETRY_AFTER_MS
    ? delayMs
    : undefined;
}

/** Exponential backoff: base · 2^(attempt−1), capped, minus up to 25 % jitter so parallel clients spread out. */
export function backoffMs(attempt: number, baseMs: number, random = Math.random()): number {
  const delay = Math.min(baseMs * 2 ** (attempt - 1), MAX_BACKOFF_MS);
  return delay * (1 - 0.25 * random);
}

/**
 * Aborts (with a 504 ProxyError as the reason) when `ms` pass without a byte from the upstream. `guard(body)` restarts
 * the clock on every chunk, so a long stream that keeps flowing never times out while a silent one does.
 */
function idleDeadline(ms: number, message: string) {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new ProxyError(504, 'upstream_timeout', message, 'upstream_timeout')),
    ms,
  );
  timer.unref();
  const clear = () => clearTimeout(timer);
  const guard = (body: ReadableStream<Uint8Array>) =>
    body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, output) {
          timer.refresh();
          output.enqueue(chunk);
        },
        flush: clear,
      }),
    );
  return { signal: controller.signal, clear, guard };
}
