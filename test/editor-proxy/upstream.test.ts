// Upstream failures through the real `openai` client: retries with backoff on 429/5xx, upstream errors kept in
// OpenAI's shape, timeouts (504) and connection failures (502); and the backoff arithmetic itself.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { backoffMs, parseRetryAfter } from '../../editor-proxy/index.ts';
import { FakeUpstream, sendEvents, sendJson, startProxy } from './fake-upstream.ts';
import { chatChunks, chatCompletion, chatRequest } from './fixtures.ts';

const request = chatRequest as ChatCompletionCreateParamsNonStreaming;
let upstream: FakeUpstream;
const proxies: Array<Awaited<ReturnType<typeof startProxy>>> = [];

async function proxyWith(options: Parameters<typeof startProxy>[0]) {
  const proxy = await startProxy(options);
  proxies.push(proxy);
  return proxy;
}

/** The client's error, which must be an `APIError` (with the proxy's status and OpenAI-shaped body). */
async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

beforeAll(async () => {
  upstream = await FakeUpstream.start();
});
afterEach(async () => {
  upstream.requests.length = 0;
  await Promise.all(proxies.splice(0).map((proxy) => proxy.app.close()));
});
afterAll(() => upstream.close());

describe('retries', () => {
  it('retries a 429 after the retry-after the upstream asked for, then returns the answer', async () => {
    upstream.handler = (_request, res) =>
      upstream.requests.length === 1
        ? sendJson(
            res,
            429,
            { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } },
            { 'retry-after': '1' },
          )
        : sendJson(res, 200, chatCompletion);
    const { client } = await proxyWith({ upstreamUrl: upstream.url });

    const started = Date.now();
    const completion = await client.chat.completions.create(request);

    expect(completion).toEqual(chatCompletion);
    expect(upstream.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950); // the 1 s asked for, not the 10 ms backoff
  });

  it('gives up after three 500s with a clear error, and the client does not retry on top', async () => {
    upstream.handler = (_request, res) =>
      sendJson(res, 500, { error: { message: 'The server had an error', type: 'server_error', code: null } });
    const { client } = await proxyWith({ upstreamUrl: upstream.url, maxRetries: 2 });

    const error = await failure(client.chat.completions.create(request)); // the client's own maxRetries is 2 as well
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    expect(error.status).toBe(500);
    expect(error.type).toBe('server_error');
    expect(error.message).toContain(
      `upstream ${upstream.url}/chat/completions answered 500: The server had an error (gave up after 3 attempts)`,
    );
    expect(upstream.requests).toHaveLength(3);
  });

  it('does not retry a 400 and keeps its code and param', async () => {
    const body = {
      error: {
        message: "Invalid value: 'x'.",
        type: 'invalid_request_error',
        code: 'invalid_value',
        param: 'messages[2].role',
      },
    };
    upstream.handler = (_request, res) => sendJson(res, 400, body);
    const { client } = await proxyWith({ upstreamUrl: upstream.url });

    const error = await failure(client.chat.completions.create(request));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error).toMatchObject({ code: 'invalid_value', param: 'messages[2].role', type: 'invalid_request_error' });
    expect(upstream.requests).toHaveLength(1);
  });

  it('reports an unreachable upstream as 502 after its retries', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/v1`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { client } = await proxyWith({ upstreamUrl: deadUrl });

    const error = await failure(client.chat.completions.create(request));
    expect(error.status).toBe(502);
    expect(error.message).toMatch(
      new RegExp(
        `could not reach upstream ${deadUrl}/chat/completions: .*ECONNREFUSED \\S+ \\(gave up after 3 attempts\\)$`,
      ),
    );
  });
});

describe('timeouts', () => {
  it('answers 504 when the upstream sends nothing, without retrying', async () => {
    upstream.handler = () => {}; // never answers
    const { client } = await proxyWith({ upstreamUrl: upstream.url, timeoutMs: 300 });

    const started = Date.now();
    const error = await failure(client.chat.completions.create(request));
    expect(error.status).toBe(504);
    expect(error.message).toContain(`upstream ${upstream.url}/chat/completions sent nothing for 300 ms (timeout`);
    expect(upstream.requests).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('--buffer-chat answers 504 when the stream stalls half-way', async () => {
    upstream.handler = (_request, res) =>
      sendEvents(
        res,
        chatChunks.map((data) => ({ data })),
        { afterEach: (i) => (i === 2 ? new Promise(() => {}) : Promise.resolve()) },
      );
    const { client } = await proxyWith({ upstreamUrl: upstream.url, timeoutMs: 300, bufferChat: true });

    const error = await failure(client.chat.completions.create(request));
    expect(error.status).toBe(504);
    expect(error.message).toContain('sent nothing for 300 ms');
  });

  it('keeps a slow stream that keeps flowing: the timeout is per silence, not per request', async () => {
    const pause = () => new Promise<void>((resolve) => setTimeout(resolve, 60));
    upstream.handler = (_request, res) =>
      sendEvents(
        res,
        chatChunks.map((data) => ({ data })),
        { afterEach: pause },
      ); // ~660 ms in all
    const { client } = await proxyWith({ upstreamUrl: upstream.url, timeoutMs: 300, bufferChat: true });

    expect(await client.chat.completions.create(request)).toEqual(chatCompletion);
  });
});

describe('--buffer-chat stream problems', () => {
  it('reports an error event inside the stream as a 502 carrying its message', async () => {
    upstream.handler = (_request, res) =>
      sendEvents(res, [
        { data: chatChunks[0] },
        { data: { error: { message: 'overloaded mid-way', type: 'server_error' } } },
      ]);
    const { client } = await proxyWith({ upstreamUrl: upstream.url, bufferChat: true });

    const error = await failure(client.chat.completions.create(request));
    expect(error.status).toBe(502);
    expect(error.message).toContain('reported an error mid-stream: overloaded mid-way');
  });

  it('reports a stream that ends without finish_reason as a 502', async () => {
    upstream.handler = (_request, res) =>
      sendEvents(
        res,
        chatChunks.slice(0, 4).map((data) => ({ data })),
      );
    const { client } = await proxyWith({ upstreamUrl: upstream.url, bufferChat: true });

    const error = await failure(client.chat.completions.create(request));
    expect(error.status).toBe(502);
    expect(error.message).toContain('the stream ended before choice 0 finished');
  });
});

describe('backoff arithmetic', () => {
  it('doubles from the base, caps at 8 s, and takes off at most 25 % as jitter', () => {
    expect([1, 2, 3].map((attempt) => backoffMs(attempt, 500, 0))).toEqual([500, 1000, 2000]);
    expect(backoffMs(10, 500, 0)).toBe(8000);
    expect(backoffMs(1, 500, 1)).toBe(375);
  });

  it('reads retry-after-ms, retry-after in seconds or as a date, and ignores waits over a minute', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '250' }), now)).toBe(250);
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:05 GMT' }), now)).toBe(5000);
    expect(parseRetryAfter(new Headers({ 'retry-after': '600' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers({ 'retry-after': 'soon' }), now)).toBeUndefined();
    expect(parseRetryAfter(new Headers(), now)).toBeUndefined();
  });
});
