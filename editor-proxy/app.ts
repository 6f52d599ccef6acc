// The editor proxy as a Fastify app factory: `buildProxy(options)` returns an app that forwards Chat Completions,
// Responses and model-list requests to the upstream with the proxy's own key; the caller decides where it listens.
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { ProxyError, streamFailure } from './errors.ts';
import { readChatCompletionStream } from './sse.ts';
import { callUpstream, type UpstreamConfig, type UpstreamReply } from './upstream.ts';

export interface ProxyOptions {
  /** The upstream API's base URL, or its full Chat Completions or Responses endpoint. Default `https://api.openai.com/v1`. */
  upstreamUrl?: string;
  /** The upstream's key; replaces whatever Authorization header the client sent. */
  apiKey: string;
  /** Ask the upstream to stream chat completions and answer non-streaming clients with one reassembled completion. Default false. */
  bufferChat?: boolean;
  /** Longest wait for the upstream's next byte, in ms. Default 600,000 (10 minutes, as the openai client). */
  timeoutMs?: number;
  /** Retries on 429/500/502/503/504 and connection failures. Default 2 (as the openai client). */
  maxRetries?: number;
  /** First backoff delay in ms (doubles per retry). Default 500 (as the openai client). */
  retryBaseDelayMs?: number;
  /** Fastify's logger option (pino). Default false. Fastify's request serializer logs no headers, so no keys either. */
  logger?: FastifyServerOptions['logger'];
}

export const PROXY_DEFAULTS = {
  upstreamUrl: 'https://api.openai.com/v1',
  bufferChat: false,
  timeoutMs: 600_000, // 10 minutes
  maxRetries: 2,
  retryBaseDelayMs: 500,
} as const;

/** Chat histories with tool results grow large; the upstream enforces its own limits. */
const BODY_LIMIT_BYTES = 64 * 1024 * 1024; // 64 MiB
/** Client headers worth passing on; everything else (Authorization above all) stays here. */
const FORWARDED_REQUEST_HEADERS = ['openai-organization', 'openai-project', 'openai-beta'];
/** Upstream headers that describe the upstream connection, not the content (fetch has already decoded the body). */
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-encoding',
  'content-length',
  'date',
  'server',
]);

const objectBodySchema = { body: { type: 'object', properties: { stream: { type: 'boolean' } } } } as const;

type JsonObject = Record<string, unknown>;

export function buildProxy(options: ProxyOptions): FastifyInstance {
  const { bufferChat, logger, ...rest } = { ...PROXY_DEFAULTS, logger: false, ...options };
  const upstream = checkConfig({ ...rest, baseUrl: upstreamBaseUrl(rest.upstreamUrl) });
  // Closing the proxy ends its run: in-flight requests are cut (and their upstream calls aborted), not awaited for minutes.
  const app = Fastify({ logger, bodyLimit: BODY_LIMIT_BYTES, forceCloseConnections: true });

  /** Answer with the upstream's reply as it is: a string, or a stream written chunk by chunk as it arrives. */
  async function passThrough(request: FastifyRequest, reply: FastifyReply, body?: JsonObject) {
    const answer = await callUpstream(
      upstream,
      upstreamRequest(request, reply, body, body?.stream === true),
      request.log,
    );
    reply.code(answer.status).headers(responseHeaders(answer.headers));
    return reply.send(bodyOf(answer));
  }

  /** `--buffer-chat`: stream from the upstream (with usage), answer with one complete `chat.completion`. */
  async function bufferedChat(request: FastifyRequest, reply: FastifyReply, body: JsonObject) {
    const streamOptions = typeof body.stream_options === 'object' ? body.stream_options : {};
    const streamed = { ...body, stream: true, stream_options: { ...streamOptions, include_usage: true } };
    const answer = await callUpstream(upstream, upstreamRequest(request, reply, streamed, true), request.log);
    reply.code(answer.status).headers(responseHeaders(answer.headers));
    if (!('stream' in answer) || !answer.headers.get('content-type')?.includes('text/event-stream')) {
      return reply.send(bodyOf(answer)); // an upstream that ignores `stream` has answered whole already
    }
    const completion = await readChatCompletionStream(answer.stream).catch((error: unknown) => {
      throw streamFailure(error, upstream.baseUrl + '/chat/completions');
    });
    return reply.type('application/json').send(completion);
  }

  app.get('/health', async () => ({ status: 'ok', upstream: upstream.baseUrl, bufferChat }));
  app.get('/v1/models', (request, reply) => passThrough(request, reply));
  app.post('/v1/responses', { schema: objectBodySchema }, (request, reply) =>
    passThrough(request, reply, request.body as JsonObject),
  );
  app.post('/v1/chat/completions', { schema: objectBodySchema }, (request, reply) => {
    const body = request.body as JsonObject;
    // A client that asks for a stream gets the stream, buffering or not.
    return bufferChat && body.stream !== true ? bufferedChat(request, reply, body) : passThrough(request, reply, body);
  });

  app.setNotFoundHandler((request, reply) => {
    const routes = 'POST /v1/chat/completions, POST /v1/responses, GET /v1/models, GET /health';
    sendError(
      reply,
      new ProxyError(
        404,
        'invalid_request_error',
        `editor proxy: no route ${request.method} ${request.url} (routes: ${routes})`,
        'not_found',
      ),
    );
  });
  app.setErrorHandler((error: FastifyError | ProxyError, request, reply) => {
    const proxyError = error instanceof ProxyError ? error : fromFastifyError(error);
    request.log[proxyError.status >= 500 ? 'error' : 'warn'](
      { status: proxyError.status, code: proxyError.code },
      proxyError.message,
    );
    sendError(reply, proxyError);
  });
  return app;
}

function upstreamRequest(request: FastifyRequest, reply: FastifyReply, body: JsonObject | undefined, stream: boolean) {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = request.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return {
    method: request.method as 'GET' | 'POST',
    path: request.url.slice('/v1'.length), // keeps the query string
    body,
    headers,
    stream,
    signal: abortWhenClientLeaves(reply),
  };
}

/** Stop paying for an upstream answer nobody will read. */
function abortWhenClientLeaves(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new Error('the client closed the connection'));
  });
  return controller.signal;
}

function bodyOf(answer: UpstreamReply): string | ReadableStream<Uint8Array> {
  return 'stream' in answer ? answer.stream : answer.text;
}

function responseHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (!DROPPED_RESPONSE_HEADERS.has(name)) kept[name] = value;
  });
  return kept;
}

/** Errors are final here: the proxy has done the retrying, so `x-should-retry: false` stops the openai client retrying too. */
function sendError(reply: FastifyReply, error: ProxyError): void {
  if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return; // a broken stream or a departed client: nothing to say
  reply.code(error.status).header('x-should-retry', 'false').type('application/json').send(error.toJSON());
}

function fromFastifyError(error: FastifyError): ProxyError {
  const status = error.statusCode ?? 500;
  if (status >= 500) return new ProxyError(status, 'proxy_error', `editor proxy: ${error.message}`, error.code ?? null);
  return new ProxyError(status, 'invalid_request_error', `editor proxy: ${error.message}`, error.code ?? null);
}

/**
 * The base URL of an upstream given either way: `https://host/v1` or a full endpoint such as
 * `https://host/v1/chat/completions` (as the seed's commands pass it); the proxy appends each route's path itself.
 */
export function upstreamBaseUrl(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/(chat\/completions|responses|completions)$/, '');
}

/** The upstream config, or an error listing every problem with the options at once. */
function checkConfig(config: UpstreamConfig & { upstreamUrl: string }): UpstreamConfig {
  const problems: string[] = [];
  if (!/^https?:\/\/[^/]/.test(config.upstreamUrl) || !URL.canParse(config.upstreamUrl))
    problems.push(`upstreamUrl must be an http(s) URL, got "${config.upstreamUrl}"`);
  if (config.apiKey === '') problems.push('apiKey is empty');
  if (!Number.isInteger(config.timeoutMs) || config.timeoutMs <= 0)
    problems.push(`timeoutMs must be a positive integer, got ${config.timeoutMs}`);
  if (!Number.isInteger(config.maxRetries) || config.maxRetries < 0)
    problems.push(`maxRetries must be an integer ≥ 0, got ${config.maxRetries}`);
  if (!(config.retryBaseDelayMs >= 0)) problems.push(`retryBaseDelayMs must be ≥ 0, got ${config.retryBaseDelayMs}`);
  if (problems.length > 0) throw new Error(`editor proxy options:\n  - ${problems.join('\n  - ')}`);
  const { baseUrl, apiKey, timeoutMs, maxRetries, retryBaseDelayMs } = config;
  return { baseUrl, apiKey, timeoutMs, maxRetries, retryBaseDelayMs };
}
