import { cpSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, TOKENS, chat, harness, type Harness } from './helpers.ts';

let h: Harness;
let client: OpenAI;
let patched: string;
let patchedDir: string;
const EDIT = { op: 'scale', tensor: 'model.layers.1.mlp.down_proj.weight', slice: [[0, 40]], factor: -4 };
beforeAll(async () => {
  h = await harness();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = h.app.server.address() as AddressInfo;
  client = new OpenAI({ apiKey: TOKENS.admin, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  const e = await h.episode();
  await h.tool(e.id, e.headers, 'write_weights', EDIT);
  ({
    model: patched,
    patch: { dir: patchedDir },
  } = (await h.app.inject({ method: 'POST', url: `/episodes/${e.id}/submit`, headers: e.headers })).json());
});
afterAll(() => h.app.close());

describe('OpenAI-compatible endpoints through the official openai client', () => {
  const messages = [{ role: 'user' as const, content: 'Name three colours.' }];

  it('lists the pristine model and submitted patches', async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    expect(ids).toEqual(['iwibench/tiny', patched]);
  });

  it('chat completions: greedy, with usage, the same text as run_target; a patch serves its own weights', async () => {
    const completion = await client.chat.completions.create({
      model: 'iwibench/tiny',
      messages,
      max_tokens: 8,
      temperature: 0,
    });
    const e = await h.episode();
    const direct = (
      await h.tool(e.id, e.headers, 'run_target', { sequences: [chat('Name three colours.')], max_new_tokens: 8 })
    ).json().result.outputs[0];
    expect(completion.choices[0]!.message.content).toBe(direct.text);
    expect(completion.usage).toEqual({
      prompt_tokens: direct.prompt_tokens,
      completion_tokens: direct.output_tokens,
      total_tokens: direct.prompt_tokens + direct.output_tokens,
    });
    expect(completion.choices[0]!.finish_reason).toBe(direct.stop_reason === 'max_tokens' ? 'length' : 'stop');
    const edited = await client.chat.completions.create({ model: patched, messages, max_tokens: 8 });
    expect(edited.choices[0]!.message.content).not.toBe(completion.choices[0]!.message.content);
  });

  it('streams the same text, chunk by chunk, with usage at the end', async () => {
    const plain = await client.chat.completions.create({ model: 'iwibench/tiny', messages, max_tokens: 10 });
    const stream = await client.chat.completions.create({
      model: 'iwibench/tiny',
      messages,
      max_tokens: 10,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage;
    let finish;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish ??= chunk.choices[0]?.finish_reason ?? undefined;
      usage ??= chunk.usage ?? undefined;
    }
    expect(text).toBe(plain.choices[0]!.message.content);
    expect(chunks).toBeGreaterThan(3);
    expect(usage).toEqual(plain.usage);
    expect(finish).toBe(plain.choices[0]!.finish_reason);
  });

  it('completions with a stop string cut the text before it', async () => {
    const full = await client.completions.create({
      model: 'iwibench/tiny',
      prompt: 'Once upon a time',
      max_tokens: 12,
    });
    const text = full.choices[0]!.text;
    expect(text.length).toBeGreaterThan(4);
    const stop = text.slice(3, 5);
    const cut = await client.completions.create({
      model: 'iwibench/tiny',
      prompt: 'Once upon a time',
      max_tokens: 12,
      stop: [stop],
    });
    expect(cut.choices[0]!.text).toBe(text.slice(0, text.indexOf(stop)));
    expect(cut.choices[0]!.finish_reason).toBe('stop');
  });

  it('errors come in OpenAI shape and map to the client error classes', async () => {
    await expect(client.chat.completions.create({ model: 'nope', messages })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(
      client.chat.completions.create({ model: 'iwibench/tiny', messages, temperature: 0.7 }),
    ).rejects.toThrow(/decodes greedily only/);
    const bad = new OpenAI({ apiKey: 'wrong', baseURL: client.baseURL, maxRetries: 0 });
    await expect(bad.chat.completions.create({ model: 'iwibench/tiny', messages })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const editor = await h.app.inject({
      method: 'GET',
      url: '/v1/models',
      headers: { authorization: `Bearer ${TOKENS.editor}` },
    });
    expect(editor.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'FORBIDDEN' } });
    expect((await h.app.inject({ method: 'GET', url: '/v1/models', headers: ADMIN })).statusCode).toBe(200);
  });

  it('serves a patch by its id: the same edits from another episode are the same model; a swapped folder is refused, not served from cache', async () => {
    const submit = async (edit: Record<string, unknown>) => {
      const e = await h.episode();
      await h.tool(e.id, e.headers, 'write_weights', edit);
      return (await h.app.inject({ method: 'POST', url: `/episodes/${e.id}/submit`, headers: e.headers })).json() as {
        model: string;
        patch: { dir: string };
      };
    };
    const same = await submit(EDIT);
    expect(same.model).toBe(patched); // provenance (the episode) is not part of the id
    const other = await submit({ ...EDIT, factor: 3 });
    expect(other.model).not.toBe(patched);
    const ask = (model: string) => client.chat.completions.create({ model, messages, max_tokens: 6 });
    const served = (await ask(patched)).choices[0]!.message.content; // now cached

    cpSync(other.patch.dir, same.patch.dir, { recursive: true, force: true }); // the folder registered for `patched` last
    const refused = await ask(patched).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(OpenAI.ConflictError);
    expect(refused).toMatchObject({ status: 409, code: 'PATCH_ID_MISMATCH' });
    expect((refused as Error).message).toContain(`not the requested ${patched.split('+patch:')[1]}`);
    expect((await ask(other.model)).choices[0]!.message.content).not.toBe(served); // the other patch is still itself

    cpSync(patchedDir, same.patch.dir, { recursive: true, force: true }); // the right files back
    expect((await ask(patched)).choices[0]!.message.content).toBe(served);
  });
});
