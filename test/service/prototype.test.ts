// No prototype holes: every object the service reads with keys chosen by the client (budgets, tool arguments, write
// ops, OpenAI bodies) refuses Object.prototype's names as it refuses any unknown key, and such a name used as a value
// (a tensor, a handle, a model, an episode id) is looked up as the string it is.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveBudgets } from '../../service/budgets.ts';
import { ADMIN, SPEC, harness, type Harness } from './helpers.ts';

const NAMES = [...new Set([...Object.getOwnPropertyNames(Object.prototype), '__proto__'])];
const TENSOR = 'model.layers.0.mlp.up_proj.weight';

/** JSON text of `template` with its key "@KEY" renamed to `name`, so that `__proto__` arrives as an own key. */
const withKey = (template: unknown, name: string) => JSON.stringify(template).replace('"@KEY"', JSON.stringify(name));

let h: Harness;
let episode: { id: string; headers: Record<string, string> };
beforeAll(async () => {
  h = await harness();
  episode = await h.episode();
});
afterAll(() => h.app.close());

describe("Object.prototype's names as keys", () => {
  it('sends each name as an own key of the body (the check sees what it checks)', () => {
    for (const name of NAMES)
      expect(Object.keys(JSON.parse(withKey({ a: 0, '@KEY': 1 }, name))), name).toEqual(['a', name]);
  });

  it('resolveBudgets refuses them as it refuses "bogus"', () => {
    expect(() => resolveBudgets({ bogus: 1 } as never)).toThrow(/unknown budget "bogus"/);
    for (const name of NAMES)
      expect(() => resolveBudgets(JSON.parse(withKey({ '@KEY': 1 }, name))), name).toThrow(/unknown budget/);
  });

  it('are refused wherever a client-keyed object is read, and change nothing', async () => {
    const tool = `/episodes/${episode.id}/tools`;
    const chat = { model: 'iwibench/tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 };
    const cases: [string, string, Record<string, string>, unknown][] = [
      ['/episodes', 'budgets', ADMIN, { ...SPEC, budgets: { '@KEY': 1 } }],
      ['/episodes', 'spec', ADMIN, { ...SPEC, '@KEY': 1 }],
      ['/episodes', 'objective', ADMIN, { ...SPEC, objective: { text: 'o', '@KEY': 1 } }],
      ['/episodes', 'practice item', ADMIN, { ...SPEC, practice: [{ ...SPEC.practice[0], '@KEY': 1 }] }],
      [`${tool}/read_weights`, 'read op', episode.headers, { op: 'metadata', '@KEY': 1 }],
      [`${tool}/read_weights`, 'manifest filter', episode.headers, { op: 'metadata', filter: { '@KEY': 1 } }],
      [
        `${tool}/write_weights`,
        'write op',
        episode.headers,
        { op: 'fill', tensor: TENSOR, slice: [0], value: 0.5, '@KEY': 1 },
      ],
      [
        `${tool}/write_weights`,
        'copy source',
        episode.headers,
        { op: 'copy', tensor: TENSOR, slice: [0], source: { tensor: TENSOR, slice: [1], '@KEY': 1 } },
      ],
      [
        `${tool}/write_weights`,
        'operand handle',
        episode.headers,
        { op: 'replace', tensor: TENSOR, slice: [0], values: { handle: 'h1', '@KEY': 1 } },
      ],
      [`${tool}/write_weights`, 'revert', episode.headers, { op: 'revert', '@KEY': 1 }],
      [
        `${tool}/run_target`,
        'run_target',
        episode.headers,
        { sequences: [{ prompt: 'Hi' }], max_new_tokens: 1, '@KEY': 1 },
      ],
      [
        `${tool}/run_target`,
        'sequence',
        episode.headers,
        { sequences: [{ messages: [{ role: 'user', content: 'Hi' }], '@KEY': 1 }], max_new_tokens: 1 },
      ],
      [
        `${tool}/run_target`,
        'message',
        episode.headers,
        { sequences: [{ messages: [{ role: 'user', content: 'Hi', '@KEY': 1 }] }], max_new_tokens: 1 },
      ],
      [
        `${tool}/inspect_target`,
        'inspect sequence',
        episode.headers,
        { sequences: [{ prompt: 'Hi', continuation: 'there', '@KEY': 1 }] },
      ],
      ['/v1/chat/completions', 'chat body', ADMIN, { ...chat, '@KEY': 1 }],
      [
        '/v1/chat/completions',
        'chat message',
        ADMIN,
        { ...chat, messages: [{ role: 'user', content: 'Hi', '@KEY': 1 }] },
      ],
      [
        '/v1/chat/completions',
        'content part',
        ADMIN,
        { ...chat, messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', '@KEY': 1 }] }] },
      ],
      ['/v1/chat/completions', 'stream_options', ADMIN, { ...chat, stream: true, stream_options: { '@KEY': true } }],
      ['/v1/completions', 'completion body', ADMIN, { model: 'iwibench/tiny', prompt: 'Hi', max_tokens: 1, '@KEY': 1 }],
    ];
    const episodesBefore = h.registry.list().length;
    for (const [url, what, headers, template] of cases) {
      const json = { ...headers, 'content-type': 'application/json' };
      const send = (name: string) =>
        h.app.inject({ method: 'POST', url, headers: json, payload: withKey(template, name) });
      expect((await send('bogus')).statusCode, `${what} with "bogus"`).toBe(400);
      for (const name of NAMES) {
        const response = await send(name);
        expect(response.statusCode, `${what} with ${name}: ${response.body}`).toBe(400);
      }
    }
    expect(h.registry.list().length).toBe(episodesBefore);
    const summary = (await h.app.inject({ method: 'GET', url: `/episodes/${episode.id}`, headers: ADMIN })).json();
    expect(summary.op_count).toBe(0);
    expect(Object.values(summary.budget.used)).toEqual(Object.values(summary.budget.used).map(() => 0));
    expect(Object.keys(summary.budget.limits)).not.toEqual(expect.arrayContaining(['toString']));
  });
});

describe("Object.prototype's names as values", () => {
  it('are names like any other: no tensor, handle, model or episode of that name', async () => {
    for (const name of NAMES) {
      const write = await h.tool(episode.id, episode.headers, 'write_weights', {
        op: 'fill',
        tensor: name,
        value: 0.5,
      });
      expect(write.statusCode, name).toBe(404);
      expect(write.json().code).toBe('WEIGHT_NOT_FOUND');
      const read = await h.tool(episode.id, episode.headers, 'read_weights', { op: 'summary', handle: name });
      expect(read.json().code, name).toBe('HANDLE_NOT_FOUND');
      const model = await h.app.inject({
        method: 'POST',
        url: '/v1/completions',
        headers: ADMIN,
        payload: { model: name, prompt: 'Hi', max_tokens: 1 },
      });
      expect(model.statusCode, name).toBe(404);
      expect(
        (await h.app.inject({ method: 'GET', url: `/episodes/${encodeURIComponent(name)}`, headers: ADMIN }))
          .statusCode,
        name,
      ).toBe(404);
      expect(
        (
          await h.app.inject({
            method: 'GET',
            url: `/episodes/${encodeURIComponent(name)}/brief`,
            headers: episode.headers,
          })
        ).statusCode,
        name,
      ).toBe(403);
    }
    const summary = (await h.app.inject({ method: 'GET', url: `/episodes/${episode.id}`, headers: ADMIN })).json();
    expect(summary.op_count).toBe(0);
    expect(summary.budget.used.tool_calls).toBe(0); // refused input is never charged
  });
});
