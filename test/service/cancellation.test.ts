// Cancellation through real HTTP: a request whose client has gone leaves the execution queue if it has not started,
// or stops at its next slice, and is not charged (the queue's own cancellation: queue.test.ts); error messages quote
// user input only up to a length.
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { QUOTE_LIMIT } from '../../service/errors.ts';
import type { GenerateOptions } from '../../engine/index.ts';
import { ADMIN, chat, harness, type Harness } from './helpers.ts';

let h: Harness;
let base: string;
beforeAll(async () => {
  h = await harness();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(() => h.app.close());
afterEach(() => vi.restoreAllMocks());

/** Wait (event-loop turns, at most ~20 s) until `condition` holds; the test fails naming `what` otherwise. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 4000; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** Hold the queue with a job of our own until `release()`. */
function holdQueue(): { release: () => void; done: Promise<unknown> } {
  let release!: () => void;
  const done = h.target.queue.run('test-blocker', () => new Promise<void>((resolve) => (release = resolve)));
  return { release: () => release(), done };
}

/** A POST through real HTTP that the test can abandon (the client goes away: its socket is closed). */
function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
): { abort: () => void; response: Promise<Response | undefined> } {
  const controller = new AbortController();
  const init = {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: controller.signal,
  };
  const response = fetch(base + url, init).catch((error) => {
    if ((error as Error).name !== 'AbortError') throw error;
    return undefined;
  });
  return { abort: () => controller.abort(), response };
}

const completion = (stream: boolean) => ({
  model: 'iwibench/tiny',
  messages: [{ role: 'user', content: 'Name three colours.' }],
  max_tokens: 64,
  stream,
});

describe('a gone client leaves the queue', () => {
  it('50 aborted streams (and 10 aborted plain completions) leave 0 queued jobs and never run', async () => {
    const generate = vi.spyOn(h.target.engine, 'generate');
    const hold = holdQueue();
    const requests = [
      ...Array.from({ length: 50 }, () => post('/v1/chat/completions', ADMIN, completion(true))),
      ...Array.from({ length: 10 }, () =>
        post('/v1/completions', ADMIN, { model: 'iwibench/tiny', prompt: 'Once upon a time', max_tokens: 8 }),
      ),
    ];
    try {
      await until(() => h.target.queue.pending === 60, '60 requests are queued');
      for (const request of requests) request.abort();
      await until(() => h.target.queue.pending === 0, 'the aborted requests have left the queue');
    } finally {
      hold.release();
    }
    await hold.done;
    await Promise.all(requests.map((r) => r.response));
    expect(generate).not.toHaveBeenCalled();
    // The service still answers.
    const after = await h.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: ADMIN,
      payload: { ...completion(false), max_tokens: 2 },
    });
    expect(after.statusCode).toBe(200);
  });

  it('a queued tool call whose client goes is dropped and charged nothing', async () => {
    const { id, headers } = await h.episode();
    const generate = vi.spyOn(h.target.engine, 'generate');
    const hold = holdQueue();
    const call = post(`/episodes/${id}/tools/run_target`, headers, { sequences: [chat('Hello')], max_new_tokens: 8 });
    try {
      await until(() => h.target.queue.pending === 1, 'the call is queued');
      call.abort();
      await until(() => h.target.queue.pending === 0, 'the call has left the queue');
    } finally {
      hold.release();
    }
    await Promise.all([hold.done, call.response]);
    expect(generate).not.toHaveBeenCalled();
    const used = (await h.app.inject({ method: 'GET', url: `/episodes/${id}`, headers: ADMIN })).json().budget.used;
    expect(used).toMatchObject({ tool_calls: 0, forward_tokens: 0, run_target_calls: 0 });
  });
});

describe('a gone client stops a started generation at its next slice', () => {
  /** Abort the request once its generation has started; let it go on once the server has seen the abort. */
  function abortOnceStarted(abort: () => void): Promise<unknown> {
    const original = h.target.engine.generate.bind(h.target.engine);
    return new Promise((resolve) => {
      vi.spyOn(h.target.engine, 'generate').mockImplementationOnce(
        async (prompts: number[][], options: GenerateOptions) => {
          abort();
          await until(() => options.signal?.aborted === true, 'the server has seen the client go');
          return original(prompts, options).then(
            (results) => (resolve(results), results),
            (error: unknown) => (resolve(error), Promise.reject(error)),
          );
        },
      );
    });
  }

  for (const stream of [true, false]) {
    it(`chat completion, ${stream ? 'streamed' : 'not streamed'}: stopped with an AbortError, nothing left queued`, async () => {
      const request = post('/v1/chat/completions', ADMIN, completion(stream));
      const outcome = await abortOnceStarted(request.abort);
      await request.response;
      expect((outcome as Error).name).toBe('AbortError');
      expect(h.target.queue.pending).toBe(0);
    });
  }

  it('run_target: stopped, and charged nothing', async () => {
    const { id, headers } = await h.episode();
    const request = post(`/episodes/${id}/tools/run_target`, headers, {
      sequences: [chat('Name three colours.')],
      max_new_tokens: 32,
      compare_base: true,
    });
    const outcome = await abortOnceStarted(request.abort);
    await request.response;
    expect((outcome as Error).name).toBe('AbortError');
    const used = (await h.app.inject({ method: 'GET', url: `/episodes/${id}`, headers: ADMIN })).json().budget.used;
    expect(used).toMatchObject({
      tool_calls: 0,
      run_target_calls: 0,
      run_target_sequence_evaluations: 0,
      forward_tokens: 0,
    });
  });
});

describe('error messages quote user input only up to a length', () => {
  const long = 'x'.repeat(1 << 20);
  const capped = (message: string) => {
    expect(message.length).toBeLessThan(QUOTE_LIMIT + 400);
    expect(message).toContain(`… (${long.length} characters)`);
  };

  it('a 1 MB model name, tensor name, handle, budget or field name comes back capped', async () => {
    const chatModel = await h.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: ADMIN,
      payload: { ...completion(false), model: long },
    });
    expect(chatModel.statusCode).toBe(404);
    capped(chatModel.json().error.message);
    const field = await h.app.inject({
      method: 'POST',
      url: '/v1/completions',
      headers: ADMIN,
      payload: { model: 'iwibench/tiny', prompt: 'Hi', [long]: 1 },
    });
    expect(field.statusCode).toBe(400);
    capped(field.json().error.message);
    expect(field.json().error.param.length).toBe(QUOTE_LIMIT);
    const { id, headers } = await h.episode();
    const tensor = await h.tool(id, headers, 'write_weights', { op: 'fill', tensor: long, value: 1 });
    expect(tensor.statusCode).toBe(404);
    capped(tensor.json().message);
    const handle = await h.tool(id, headers, 'read_weights', { op: 'summary', handle: long });
    expect(handle.statusCode).toBe(404);
    capped(handle.json().message);
    const spec = { family: 'f', seed: 0, objective: 'o', relevant_token_ids: [], practice: [], budgets: { [long]: 1 } };
    const budget = await h.app.inject({ method: 'POST', url: '/episodes', headers: ADMIN, payload: spec });
    expect(budget.statusCode).toBe(400);
    capped(budget.json().message);
  });
});
