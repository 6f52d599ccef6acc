// Log-probabilities, echo and token prompts on the OpenAI-compatible endpoints, through the official openai client:
// every returned log-probability equals log-softmax of the engine's `logits` (the `logits` command's output) at
// the same position within 1e-5, for the echoed prompt and generated tokens, chat and completions, streamed and
// not; token-id prompts give what their text gives; every parameter that could change greedy output is refused.
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../service/app.ts';
import { GenerationLogprobs, logSoftmaxAt } from '../../service/logprobs.ts';
import type { GenerateResult } from '../../engine/index.ts';
import { Target } from '../../service/target.ts';
import { showToken } from '../../service/token-text.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { ADMIN, TOKENS, harness, type Harness } from './helpers.ts';

const MODEL = 'iwibench/tiny';
const TOLERANCE = 1e-5;

let h: Harness;
let client: OpenAI;
beforeAll(async () => {
  h = await harness();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  client = new OpenAI({
    apiKey: TOKENS.admin,
    baseURL: `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}/v1`,
    maxRetries: 0,
  });
});
afterAll(() => h.app.close());
afterEach(() => vi.restoreAllMocks());

/** log-softmax (float64) of the engine's logits of `ids`, position by position: the reference. */
async function reference(ids: number[], target: Target = h.target): Promise<Float64Array[]> {
  const V = target.checkpoint.config.vocab_size;
  const logits = await target.engine.logits(ids);
  return ids.map((_, p) => {
    const row = logits.subarray(p * V, (p + 1) * V);
    let max = -Infinity;
    for (const x of row) max = Math.max(max, x);
    let sum = 0;
    for (const x of row) sum += Math.exp(x - max);
    const lse = max + Math.log(sum);
    return Float64Array.from(row, (x) => x - lse);
  });
}

/** The k most likely ids of a reference row (ties: the lower id first). */
function topIds(row: Float64Array, k: number): number[] {
  const best: number[] = [];
  row.forEach((value, id) => {
    if (best.length === k && value <= row[best[k - 1]!]!) return;
    best.push(id);
    best.sort((a, b) => row[b]! - row[a]! || a - b);
    if (best.length > k) best.pop();
  });
  return best;
}

/** Greedy output ids as run_target would make them (the engine, pristine weights). */
async function greedy(ids: number[], maxNewTokens: number): Promise<GenerateResult> {
  return (await h.target.engine.generate([ids], { maxNewTokens }))[0]!;
}

const shown = (id: number) => showToken(h.target.tokenizer, id).token;

/** Check a legacy logprobs object against the reference: `first` is the position of its first token in `ids`. */
function expectLegacy(
  logprobs: OpenAI.Completions.CompletionChoice.Logprobs,
  ids: number[],
  first: number,
  rows: Float64Array[],
  k: number,
) {
  expect(logprobs.tokens).toEqual(ids.slice(first).map(shown));
  logprobs.token_logprobs!.forEach((value, i) => {
    const p = first + i;
    if (p === 0) {
      expect(value).toBeNull(); // nothing precedes the first token
      expect(logprobs.top_logprobs![i]).toBeNull();
      return;
    }
    const row = rows[p - 1]!;
    expect(Math.abs(value - row[ids[p]!]!), `token ${p}`).toBeLessThan(TOLERANCE);
    const top = logprobs.top_logprobs![i]!;
    const want = topIds(row, k);
    expect(Object.keys(top).slice(0, k)).toEqual(want.map(shown));
    for (const id of [...want, ids[p]!])
      expect(Math.abs(top[shown(id)]! - row[id]!), `top ${id} at ${p}`).toBeLessThan(TOLERANCE);
  });
}

describe('/v1/completions: logprobs, echo, token prompts', () => {
  const prompt = 'Once upon a time';

  it('echo and generated tokens: log-probabilities equal log-softmax of the logits at the same positions', async () => {
    const ids = h.target.promptIds({ prompt });
    const result = await greedy(ids, 6);
    const all = [...ids, ...result.outputIds];
    const rows = await reference(all);
    const completion = await client.completions.create({
      model: MODEL,
      prompt,
      max_tokens: 6,
      logprobs: 5,
      echo: true,
    });
    const choice = completion.choices[0]!;
    expect(result.stopReason).toBe('max_tokens'); // so no stop token follows the six
    expectLegacy(choice.logprobs!, all, 0, rows, 5);
    const text = h.target.tokenizer.decode(ids) + h.target.tokenizer.decode(result.outputIds);
    expect(choice.text).toBe(text);
    const offsets = choice.logprobs!.text_offset!;
    expect(offsets[ids.length]).toBe(h.target.tokenizer.decode(ids).length);
    expect(offsets.every((o, i) => i === 0 || o >= offsets[i - 1]!)).toBe(true);
    expect(completion.usage).toEqual({
      prompt_tokens: ids.length,
      completion_tokens: ids.length + 6,
      total_tokens: 2 * ids.length + 6,
    });
    // Without echo: the generated tokens only, offsets into the generated text.
    const plain = await client.completions.create({ model: MODEL, prompt, max_tokens: 6, logprobs: 2 });
    expectLegacy(plain.choices[0]!.logprobs!, all, ids.length, rows, 2);
    expect(plain.choices[0]!.logprobs!.text_offset![0]).toBe(0);
    expect(plain.usage?.completion_tokens).toBe(6);
  });

  it('streamed: the chunks add up to the same text and log-probabilities', async () => {
    const body = { model: MODEL, prompt, max_tokens: 6, logprobs: 3, echo: true } as const;
    const whole = (await client.completions.create(body)).choices[0]!;
    const stream = await client.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
    const joined = {
      tokens: [] as string[],
      token_logprobs: [] as (number | null)[],
      top_logprobs: [] as unknown[],
      text_offset: [] as number[],
    };
    let text = '';
    let finish;
    let usage;
    let chunks = 0;
    for await (const chunk of stream) {
      usage ??= chunk.usage ?? undefined;
      const choice = chunk.choices[0];
      if (!choice) continue;
      chunks++;
      text += choice.text;
      finish ??= choice.finish_reason ?? undefined;
      for (const key of ['tokens', 'token_logprobs', 'top_logprobs', 'text_offset'] as const) {
        (joined[key] as unknown[]).push(...(choice.logprobs?.[key] ?? []));
      }
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text).toBe(whole.text);
    expect(joined).toEqual(whole.logprobs);
    expect(finish).toBe(whole.finish_reason);
    expect(usage).toMatchObject({ completion_tokens: h.target.promptIds({ prompt }).length + 6 });
  });

  it('max_tokens 0 with echo scores the prompt without generating', async () => {
    const ids = h.target.promptIds({ prompt });
    const rows = await reference(ids);
    const generate = vi.spyOn(h.target.engine, 'generate');
    const scored = await client.completions.create({
      model: MODEL,
      prompt: ids,
      max_tokens: 0,
      echo: true,
      logprobs: 1,
    });
    expect(generate).not.toHaveBeenCalled();
    expectLegacy(scored.choices[0]!.logprobs!, ids, 0, rows, 1);
    expect(scored.choices[0]!).toMatchObject({ text: h.target.tokenizer.decode(ids), finish_reason: 'length' });
    expect(scored.usage).toEqual({
      prompt_tokens: ids.length,
      completion_tokens: ids.length,
      total_tokens: 2 * ids.length,
    });
  });

  it('token-id prompts give what their text gives; several prompts give one choice each, in order', async () => {
    const other = 'The capital of France is';
    const body = { model: MODEL, max_tokens: 4, logprobs: 2, echo: true };
    const [a, b] = [prompt, other].map((p) => h.target.promptIds({ prompt: p }));
    const byText = await client.completions.create({ ...body, prompt });
    const byIds = await client.completions.create({ ...body, prompt: a! });
    expect(byIds.choices).toEqual(byText.choices);
    const single = (await client.completions.create({ ...body, prompt: other })).choices[0]!;
    for (const several of [
      [prompt, other],
      [a!, b!],
    ]) {
      const both = await client.completions.create({ ...body, prompt: several });
      expect(both.choices).toEqual([byText.choices[0], { ...single, index: 1 }]);
      expect(both.usage!.prompt_tokens).toBe(a!.length + b!.length);
    }
  });

  it('with a stop string, the log-probabilities cover the tokens of the text returned, streamed or not', async () => {
    const ids = h.target.promptIds({ prompt });
    const full = await client.completions.create({ model: MODEL, prompt, max_tokens: 8, logprobs: 1 });
    const text = full.choices[0]!.text;
    const stop = text.slice(5, 7);
    const body = { model: MODEL, prompt, max_tokens: 8, logprobs: 1, stop: [stop] };
    const cut = (await client.completions.create(body)).choices[0]!;
    expect(cut.text).toBe(text.slice(0, text.indexOf(stop)));
    const offsets = cut.logprobs!.text_offset!;
    expect(offsets.every((o) => o < cut.text.length)).toBe(true);
    expect(offsets.length).toBeLessThan(full.choices[0]!.logprobs!.tokens!.length);
    expect(cut.logprobs!.tokens!.join('').startsWith(cut.text)).toBe(true);
    const output = (await greedy(ids, 8)).outputIds;
    const rows = await reference([...ids, ...output]);
    cut.logprobs!.token_logprobs!.forEach((value, j) =>
      expect(Math.abs(value - rows[ids.length - 1 + j]![output[j]!]!)).toBeLessThan(TOLERANCE),
    );
    const streamed: number[] = [];
    for await (const chunk of await client.completions.create({ ...body, stream: true }))
      streamed.push(...(chunk.choices[0]?.logprobs?.token_logprobs ?? []));
    expect(streamed).toEqual(cut.logprobs!.token_logprobs);
  });

  it("lm-evaluation-harness's loglikelihood request: the continuation's log-probability and greediness", async () => {
    // As lm_eval's local-completions sends it (tokenized_requests=True): echo, one token, logprobs 1, a seed.
    const context = h.target.promptIds({ prompt: 'Question: what colour is the sky? Answer:' });
    const continuation = h.target.tokenizer.encodeRaw(' blue');
    const ids = [...context, ...continuation];
    const rows = await reference(ids);
    const out = await client.completions.create({
      model: MODEL,
      prompt: [ids],
      temperature: 0,
      max_tokens: 1,
      logprobs: 1,
      seed: 1234,
      echo: true,
    });
    const choice = out.choices[0]!;
    // parse_logprobs: sum(token_logprobs[ctxlen:-1]), greedy when each equals the max of its top_logprobs.
    const tokenLogprobs = choice.logprobs!.token_logprobs!.slice(context.length, -1);
    const want = continuation.map((id, i) => rows[context.length - 1 + i]![id]!);
    expect(tokenLogprobs.length).toBe(continuation.length);
    expect(Math.abs(tokenLogprobs.reduce((s, x) => s + x, 0) - want.reduce((s, x) => s + x, 0))).toBeLessThan(
      TOLERANCE * continuation.length,
    );
    const greedyHere = choice
      .logprobs!.top_logprobs!.slice(context.length, -1)
      .every((top, i) => tokenLogprobs[i] === Math.max(...Object.values(top)));
    expect(greedyHere).toBe(continuation.every((id, i) => topIds(rows[context.length - 1 + i]!, 1)[0] === id));
  });
});

describe('a completion that ends on a stop token (the toy target ends its answers with <end_of_turn>)', () => {
  it('lists that token last, with its log-probability, so dropping the last entry never drops a prompt token', async () => {
    const toy = await Target.load({ modelDir: path.join(REPO_ROOT, 'toy/target') });
    const { app } = await buildApp({
      target: toy,
      outputDir: mkdtempSync(path.join(os.tmpdir(), 'iwibench-toy-')),
      tokens: TOKENS,
    });
    try {
      const ids = toy.promptIds({ messages: [{ role: 'user', content: 'What is 2 + 3?' }] });
      const result = (await toy.engine.generate([ids], { maxNewTokens: 40 }))[0]!;
      expect(result.stopReason).toBe('end_of_turn');
      const all = [...ids, ...result.outputIds, 106];
      const rows = await reference(all, toy);
      const payload = { model: toy.modelId, prompt: ids, max_tokens: 40, logprobs: 2, echo: true };
      const response = await app.inject({ method: 'POST', url: '/v1/completions', headers: ADMIN, payload });
      const choice = response.json().choices[0];
      expect(choice.finish_reason).toBe('stop');
      expect(choice.logprobs.tokens).toEqual(all.map((id) => showToken(toy.tokenizer, id).token));
      expect(choice.logprobs.tokens.at(-1)).toBe('<end_of_turn>');
      expect(Math.abs(choice.logprobs.token_logprobs.at(-1) - rows[all.length - 2]![106]!)).toBeLessThan(TOLERANCE);
      expect(choice.logprobs.text_offset.at(-1)).toBe(choice.text.length);
      expect(choice.text).toBe(toy.tokenizer.decode(ids) + toy.tokenizer.decode(result.outputIds));
      expect(response.json().usage.completion_tokens).toBe(ids.length + result.outputIds.length); // the stop token is not counted
      // Chat: the closing <end_of_turn> is not among the content tokens.
      const messages = [{ role: 'user', content: 'What is 2 + 3?' }];
      const chat = await app.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: ADMIN,
        payload: { model: toy.modelId, messages, logprobs: true },
      });
      const tokens = chat.json().choices[0].logprobs.content.map((c: { token: string }) => c.token);
      expect(tokens).toEqual(result.outputIds.map((id) => showToken(toy.tokenizer, id).token));
    } finally {
      await app.close();
      await toy.close();
    }
  });
});

describe('/v1/chat/completions: logprobs and top_logprobs', () => {
  const messages = [{ role: 'user' as const, content: 'Name three colours.' }];

  it('each generated token with its log-probability, bytes and top_logprobs, streamed too', async () => {
    const ids = h.target.promptIds({ messages });
    const result = await greedy(ids, 6);
    const rows = await reference([...ids, ...result.outputIds]);
    const completion = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 6,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = completion.choices[0]!.logprobs!.content!;
    expect(content.map((c) => c.token)).toEqual(result.outputIds.map(shown));
    content.forEach((entry, j) => {
      const row = rows[ids.length - 1 + j]!;
      const want = topIds(row, 3);
      expect(Math.abs(entry.logprob - row[result.outputIds[j]!]!), `token ${j}`).toBeLessThan(TOLERANCE);
      expect(entry.bytes).toEqual([...Buffer.from(entry.token, 'utf8')]);
      expect(entry.top_logprobs.map((t) => t.token)).toEqual(want.map(shown));
      entry.top_logprobs.forEach((t, r) => expect(Math.abs(t.logprob - row[want[r]!]!)).toBeLessThan(TOLERANCE));
    });
    expect(completion.choices[0]!.message.content).toBe(h.target.tokenizer.decode(result.outputIds));

    const stream = await client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 6,
      logprobs: true,
      top_logprobs: 3,
      stream: true,
    });
    const streamed: OpenAI.Chat.ChatCompletionTokenLogprob[] = [];
    let text = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      streamed.push(...(chunk.choices[0]?.logprobs?.content ?? []));
    }
    expect(text).toBe(completion.choices[0]!.message.content);
    expect(streamed).toEqual(content);

    const bare = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, logprobs: true });
    expect(bare.choices[0]!.logprobs!.content!.map((c) => [c.token, c.logprob, c.top_logprobs])).toEqual(
      content.map((c) => [c.token, c.logprob, []]),
    );
    const none = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6 });
    expect(none.choices[0]!.logprobs).toBeNull();
  });
});

describe('no parameter silently ignored', () => {
  const chat = { model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3 };
  const text = { model: MODEL, prompt: 'Hi', max_tokens: 3 };

  it('takes the parameters that cannot change greedy output, and gives the same text', async () => {
    const plain = await h.app.inject({ method: 'POST', url: '/v1/chat/completions', headers: ADMIN, payload: chat });
    const neutralValues = { top_p: 1, seed: 7, frequency_penalty: 0, presence_penalty: 0, temperature: 0, n: 1 };
    const neutral = await h.app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: ADMIN,
      payload: { ...chat, ...neutralValues },
    });
    expect(neutral.statusCode).toBe(200);
    expect(neutral.json().choices[0].message.content).toBe(plain.json().choices[0].message.content);
    const nullValues = { top_p: null, seed: null, logprobs: null, echo: null };
    const nulls = await h.app.inject({
      method: 'POST',
      url: '/v1/completions',
      headers: ADMIN,
      payload: { ...text, ...nullValues },
    });
    expect(nulls.statusCode).toBe(200);
  });

  it('refuses every other value or parameter with a 400 in OpenAI error shape that names it', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['/v1/chat/completions', { temperature: 0.7 }, 'temperature'],
      ['/v1/chat/completions', { top_p: 0.9 }, 'top_p'],
      ['/v1/chat/completions', { n: 2 }, 'n'],
      ['/v1/chat/completions', { frequency_penalty: 0.5 }, 'frequency_penalty'],
      ['/v1/completions', { presence_penalty: -1 }, 'presence_penalty'],
      ['/v1/chat/completions', { logit_bias: { '1': 5 } }, 'logit_bias'],
      ['/v1/chat/completions', { tools: [] }, 'tools'],
      ['/v1/chat/completions', { response_format: { type: 'json_object' } }, 'response_format'],
      ['/v1/chat/completions', { user: 'u' }, 'user'],
      ['/v1/chat/completions', { echo: true }, 'echo'],
      ['/v1/chat/completions', { top_logprobs: 2 }, 'top_logprobs'],
      ['/v1/chat/completions', { logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
      ['/v1/chat/completions', { stream_options: { include_usage: true } }, 'stream_options'],
      ['/v1/completions', { suffix: '!' }, 'suffix'],
      ['/v1/completions', { best_of: 2 }, 'best_of'],
      ['/v1/completions', { logprobs: 21 }, 'logprobs'],
      ['/v1/completions', { logprobs: true }, 'logprobs'],
      ['/v1/completions', { max_tokens: 0 }, 'max_tokens'],
      ['/v1/completions', { max_completion_tokens: 3 }, 'max_completion_tokens'],
      ['/v1/completions', { prompt: [2, 262_144] }, 'prompt'],
      ['/v1/completions', { prompt: [] }, 'prompt'],
    ];
    for (const [url, extra, param] of cases) {
      const base = url === '/v1/completions' ? text : chat;
      const error = await client.post(url.replace('/v1', ''), { body: { ...base, ...extra } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, `${param}: ${JSON.stringify(extra)}`).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param, JSON.stringify(extra)).toBe(param);
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).type).toBe('invalid_request_error');
    }
  });
});

describe('logSoftmaxAt and GenerationLogprobs', () => {
  it('log-softmax in float64, rounded to float32; ties go to the lower id, as greedy picks', () => {
    const logits = Float32Array.from([0.5, 3, -1, 3, 2]);
    const entry = logSoftmaxAt(logits, 3);
    const lse = Math.log([...logits].reduce((s, x) => s + Math.exp(x), 0));
    expect(entry.id).toBe(1);
    expect(entry.logprob).toBe(Math.fround(3 - lse));
    expect(entry.top).toEqual([
      { id: 1, logprob: Math.fround(3 - lse) },
      { id: 3, logprob: Math.fround(3 - lse) },
      { id: 4, logprob: Math.fround(2 - lse) },
    ]);
    expect(logSoftmaxAt(logits, 0, 2)).toEqual({ id: 2, logprob: Math.fround(-1 - lse), top: [] });
  });

  it('keeps the stop token greedy decoding chose apart from the output tokens', () => {
    const collected = new GenerationLogprobs(1);
    const step = (best: number) => Float32Array.from({ length: 200 }, (_, i) => (i === best ? 5 : 0));
    collected.onLogits(0, step(150));
    collected.onToken(0, 150);
    collected.onLogits(0, step(1)); // <eos>: not an output token
    collected.finish({ promptIds: [2], outputIds: [150], promptTokens: 1, outputTokens: 1, stopReason: 'eos' });
    expect(collected.tokens.map((t) => t.id)).toEqual([150]);
    expect(collected.stop).toMatchObject({ id: 1, top: [{ id: 1 }] });
    expect(() => collected.onToken(0, 7)).toThrow(/greedy choice is 1/);
  });
});
