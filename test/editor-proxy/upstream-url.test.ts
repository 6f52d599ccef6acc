// `--upstream-url` as a base URL or as the full endpoint the seed's commands pass
// (https://…/v1/chat/completions): either way each route reaches its own path on the upstream, once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { ResponseCreateParamsNonStreaming } from 'openai/resources/responses/responses';
import { upstreamBaseUrl } from '../../editor-proxy/index.ts';
import { FakeUpstream, sendJson, startProxy } from './fake-upstream.ts';
import { chatCompletion, chatRequest, response, responsesRequest } from './fixtures.ts';

let upstream: FakeUpstream;
beforeAll(async () => {
  upstream = await FakeUpstream.start();
  upstream.handler = (request, res) =>
    sendJson(res, 200, request.url.endsWith('/responses') ? response : chatCompletion);
});
afterAll(async () => upstream.close());

describe('--upstream-url', () => {
  it('reduces a full endpoint to its base URL and leaves a base URL as it is', () => {
    expect(upstreamBaseUrl('https://openrouter.ai/api/v1/chat/completions')).toBe('https://openrouter.ai/api/v1');
    expect(upstreamBaseUrl('https://openrouter.ai/api/v1/chat/completions/')).toBe('https://openrouter.ai/api/v1');
    expect(upstreamBaseUrl('https://api.openai.com/v1/responses')).toBe('https://api.openai.com/v1');
    expect(upstreamBaseUrl('https://api.openai.com/v1/')).toBe('https://api.openai.com/v1');
  });

  it.each(['', '/chat/completions', '/responses'])(
    'given as base%s, posts chat and responses to their own paths',
    async (suffix) => {
      const proxy = await startProxy({ upstreamUrl: `${upstream.url}${suffix}` });
      upstream.requests.length = 0;
      try {
        expect(
          await proxy.client.chat.completions.create(chatRequest as ChatCompletionCreateParamsNonStreaming),
        ).toEqual(chatCompletion);
        await proxy.client.responses.create(responsesRequest as ResponseCreateParamsNonStreaming);
        expect(upstream.requests.map((r) => r.url)).toEqual([
          `${new URL(upstream.url).pathname}/chat/completions`,
          `${new URL(upstream.url).pathname}/responses`,
        ]);
      } finally {
        await proxy.app.close();
      }
    },
  );
});
