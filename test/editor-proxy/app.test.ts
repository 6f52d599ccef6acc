// The proxy through the real `openai` client against a fake upstream: plain, streamed and buffered chat, the
// Responses API with reasoning items, the model list, the key swap, and dropping calls the client gave up on.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { CLIENT_KEY, FakeUpstream, UPSTREAM_KEY, sendEvents, sendJson, startProxy } from './fake-upstream.ts';
import { chatChunks, chatCompletion, chatRequest, response, responseEvents, responsesRequest } from './fixtures.ts';

let upstream: FakeUpstream;
let proxy: Awaited<ReturnType<typeof startProxy>>;
let buffering: Awaited<ReturnType<typeof startProxy>>;

beforeAll(async () => {
  upstream = await FakeUpstream.start();
  proxy = await startProxy({ upstreamUrl: upstream.url });
  buffering = await startProxy({ upstreamUrl: upstream.url, bufferChat: true });
});
afterEach(() => {
  upstream.requests.length = 0;
});
afterAll(async () => {
  await upstream.close();
  await proxy.app.close();
  await buffering.app.close();
});

/** Chat: the whole completion for plain requests, the chunks for streamed ones. */
function answerChat() {
  upstream.handler = (request, res) =>
    request.body.stream
      ? sendEvents(
          res,
          chatChunks.map((data) => ({ data })),
        )
      : sendJson(res, 200, chatCompletion);
}

describe('chat completions', () => {
  it('forwards a plain request unchanged with the proxy key, and returns the completion as the upstream sent it', async () => {
    answerChat();
    const completion = await proxy.client.chat.completions.create(
      chatRequest as ChatCompletionCreateParamsNonStreaming,
    );

    expect(completion).toEqual(chatCompletion);
    expect(upstream.requests).toHaveLength(1);
    const [seen] = upstream.requests;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/v1/chat/completions');
    expect(seen.body).toEqual(chatRequest); // reasoning_content, tools and unknown fields intact
    expect(seen.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(seen.headers)).not.toContain(CLIENT_KEY);
  });

  it('passes a stream through chunk by chunk', async () => {
    // The upstream holds every chunk after the first until the client has received that first one: a proxy that
    // buffered the stream would never deliver it, and the test would time out.
    let firstSeen!: () => void;
    const clientHasFirst = new Promise<void>((resolve) => (firstSeen = resolve));
    upstream.handler = (_request, res) =>
      sendEvents(
        res,
        chatChunks.map((data) => ({ data })),
        { afterEach: (i) => (i === 0 ? clientHasFirst : Promise.resolve()) },
      );

    const stream = await proxy.client.chat.completions.create({
      ...(chatRequest as ChatCompletionCreateParamsNonStreaming),
      stream: true,
    });
    const received: ChatCompletionChunk[] = [];
    for await (const chunk of stream) {
      received.push(chunk);
      firstSeen();
    }

    expect(received).toEqual(chatChunks);
    expect(upstream.requests[0].body).toEqual({ ...chatRequest, stream: true });
  }, 5_000);

  it('--buffer-chat streams from the upstream and answers with one complete completion', async () => {
    answerChat();
    const completion = await buffering.client.chat.completions.create(
      chatRequest as ChatCompletionCreateParamsNonStreaming,
    );

    expect(upstream.requests[0].body).toEqual({
      ...chatRequest,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(completion).toEqual(chatCompletion); // content, reasoning, both tool calls, finish_reason, usage details
    expect(upstream.requests[0].headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
  });

  it('--buffer-chat still streams to a client that asks for a stream, and leaves its body alone', async () => {
    answerChat();
    const stream = await buffering.client.chat.completions.create({
      ...(chatRequest as ChatCompletionCreateParamsNonStreaming),
      stream: true,
    });
    const received: ChatCompletionChunk[] = [];
    for await (const chunk of stream) received.push(chunk);

    expect(received).toEqual(chatChunks);
    expect(upstream.requests[0].body).toEqual({ ...chatRequest, stream: true });
  });
});

describe('responses', () => {
  it('forwards a plain request with reasoning items and returns the reasoning and function call items', async () => {
    upstream.handler = (_request, res) => sendJson(res, 200, response);
    const answer = await proxy.client.responses.create(responsesRequest as ResponseCreateParamsNonStreaming);

    expect(upstream.requests[0].url).toBe('/v1/responses');
    expect(upstream.requests[0].body).toEqual(responsesRequest); // encrypted reasoning, include, store: false
    expect(answer).toMatchObject(response);
    expect(answer.usage?.input_tokens_details.cached_tokens).toBe(2816);
    expect(answer.usage?.output_tokens_details.reasoning_tokens).toBe(128);
  });

  it('passes a streamed response through event by event', async () => {
    upstream.handler = (_request, res) =>
      sendEvents(
        res,
        responseEvents.map((data) => ({ event: data.type, data })),
        { done: false },
      );
    const request = {
      ...(responsesRequest as ResponseCreateParamsNonStreaming),
      previous_response_id: 'resp_earlier',
      stream: true as const,
    };
    const events = [];
    for await (const event of await proxy.client.responses.create(request)) events.push(event);

    expect(upstream.requests[0].body).toEqual(request);
    expect(events).toEqual(responseEvents);
    const completed = events.at(-1);
    expect(completed?.type === 'response.completed' && completed.response.output.map((item) => item.type)).toEqual([
      'reasoning',
      'function_call',
    ]);
  });
});

describe('the rest', () => {
  it('passes the model list through', async () => {
    const models = { object: 'list', data: [{ id: 'gpt-fake-terra', object: 'model', created: 1, owned_by: 'fake' }] };
    upstream.handler = (_request, res) => sendJson(res, 200, models);
    const page = await proxy.client.models.list();

    expect(page.data).toEqual(models.data);
    expect(upstream.requests[0]).toMatchObject({ method: 'GET', url: '/v1/models' });
  });

  it('drops the upstream call when the client gives up waiting', async () => {
    let upstreamReached!: () => void;
    const reached = new Promise<void>((resolve) => (upstreamReached = resolve));
    const upstreamClosed = new Promise<void>((resolve) => {
      upstream.handler = (_request, res) => {
        res.on('close', resolve); // never answers; only the proxy can end this
        upstreamReached();
      };
    });
    const controller = new AbortController();
    const call = proxy.client.chat.completions.create(chatRequest as ChatCompletionCreateParamsNonStreaming, {
      signal: controller.signal,
    });
    await reached;
    controller.abort();

    await expect(call).rejects.toThrow(/abort/i);
    await upstreamClosed; // the test times out if the proxy keeps waiting on the upstream
  }, 5_000);

  it('answers /health without calling the upstream', async () => {
    const health = await fetch(`${buffering.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok', upstream: upstream.url, bufferChat: true });
    expect(upstream.requests).toHaveLength(0);
  });

  it('refuses a body that is not a JSON object, and an unknown route, in OpenAI error shape', async () => {
    const post = (path: string, body: string) =>
      fetch(`${proxy.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

    const notObject = await post('/v1/chat/completions', '[1, 2]');
    expect(notObject.status).toBe(400);
    expect((await notObject.json()).error).toMatchObject({
      type: 'invalid_request_error',
      message: expect.stringContaining('body must be object'),
    });

    const notJson = await post('/v1/responses', '{"model": ');
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.type).toBe('invalid_request_error');

    const unknown = await post('/v1/embeddings', '{}');
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.message).toContain('no route POST /v1/embeddings');
    expect(upstream.requests).toHaveLength(0);
  });
});
