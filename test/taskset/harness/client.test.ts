// SDK errors are told apart by class (after the SDK's retries), against a real HTTP server.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  editorApiFailure,
  openaiClient,
  resolveEditorConfig,
  type EditorOptions,
} from '../../../taskset/harness/index.ts';
import { API_KEY, FakeEditorApi } from './fake-editor-api.ts';

let api: FakeEditorApi;
beforeAll(async () => {
  api = await FakeEditorApi.start();
});
afterAll(async () => {
  await api?.close();
});

async function failure(options: EditorOptions, key = API_KEY) {
  const client = openaiClient(
    resolveEditorConfig({ baseUrl: api.url, maxRetries: 0, ...options }, { OPENAI_API_KEY: key }),
  );
  const error = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).then(
    () => undefined,
    (e: unknown) => e,
  );
  return editorApiFailure(error);
}

it('maps the SDK error classes to failure kinds', async () => {
  api.script([{ status: 429, message: 'slow down' }]);
  expect(await failure({})).toMatchObject({ kind: 'rate_limit', status: 429, requestId: 'req_1' });
  api.script([]);
  expect(await failure({}, 'sk-wrong')).toMatchObject({ kind: 'auth', status: 401 });
  api.script([]); // no reply left: the fake answers 400
  expect(await failure({})).toMatchObject({ kind: 'request', status: 400 });
  api.script([{ usage: { input: 1, cached: 0, output: 1, reasoning: 0 }, delayMs: 2_000 }]);
  expect(await failure({ timeoutMs: 100 })).toMatchObject({ kind: 'timeout' });
});

it('maps a refused connection, and leaves errors that are not the SDK’s alone', async () => {
  const closed = http.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  expect(await failure({ baseUrl: `http://127.0.0.1:${port}/v1` })).toMatchObject({ kind: 'connection' });
  expect(editorApiFailure(new Error('a bug'))).toBeUndefined();
});
