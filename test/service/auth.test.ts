import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokensFromEnv } from '../../service/auth.ts';
import { ADMIN, TOKENS, harness, type Harness } from './helpers.ts';

let h: Harness;
let episode: { id: string; headers: Record<string, string> };
let other: { id: string; headers: Record<string, string> };
beforeAll(async () => {
  h = await harness();
  episode = await h.episode();
  other = await h.episode();
});
afterAll(() => h.app.close());

describe('auth', () => {
  it('refuses to start without two distinct tokens', () => {
    expect(() => tokensFromEnv({})).toThrow(/IWIBENCH_ADMIN_TOKEN is not set; IWIBENCH_EDITOR_TOKEN is not set/);
    expect(() => tokensFromEnv({ IWIBENCH_ADMIN_TOKEN: 'x', IWIBENCH_EDITOR_TOKEN: 'x' })).toThrow(/must differ/);
    expect(tokensFromEnv({ IWIBENCH_ADMIN_TOKEN: 'x', IWIBENCH_EDITOR_TOKEN: 'y' })).toEqual({
      admin: 'x',
      editor: 'y',
    });
  });

  it('401 for a missing or wrong token, on every protected route', async () => {
    for (const headers of [{}, { authorization: 'Bearer nope' }, { authorization: TOKENS.admin }]) {
      for (const [method, url] of [
        ['GET', '/episodes'],
        ['GET', `/episodes/${episode.id}/brief`],
        ['POST', `/episodes/${episode.id}/tools/read_weights`],
        ['GET', '/v1/models'],
      ] as const) {
        const response = await h.app.inject({
          method,
          url,
          headers,
          payload: method === 'POST' ? { op: 'metadata' } : undefined,
        });
        expect(response.statusCode, `${method} ${url}`).toBe(401);
      }
    }
  });

  it('403 for the editor on admin routes, and on another episode', async () => {
    const editor = episode.headers;
    expect((await h.app.inject({ method: 'GET', url: '/episodes', headers: editor })).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'POST', url: '/episodes', headers: editor, payload: {} })).statusCode).toBe(
      403,
    );
    expect((await h.app.inject({ method: 'GET', url: '/v1/models', headers: editor })).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'DELETE', url: `/episodes/${episode.id}`, headers: editor })).statusCode).toBe(
      403,
    );
    const foreign = await h.app.inject({ method: 'GET', url: `/episodes/${other.id}/brief`, headers: editor });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().message).toMatch(/only reach its own episode/);
    expect((await h.tool(other.id, editor, 'read_weights', { op: 'metadata' })).statusCode).toBe(403);
  });

  it('lets the editor reach its brief, manifest and tools, and the admin everything', async () => {
    expect(
      (await h.app.inject({ method: 'GET', url: `/episodes/${episode.id}/brief`, headers: episode.headers }))
        .statusCode,
    ).toBe(200);
    expect(
      (
        await h.app.inject({
          method: 'GET',
          url: `/episodes/${episode.id}/manifest?kind=norm`,
          headers: episode.headers,
        })
      ).json().count,
    ).toBe(6 * 6 + 1); // 4 layer norms + q_norm + k_norm per layer, and the final norm
    expect(
      (await h.tool(episode.id, episode.headers, 'read_weights', { op: 'metadata', filter: { layer: 0 } })).statusCode,
    ).toBe(200);
    expect((await h.app.inject({ method: 'GET', url: `/episodes/${episode.id}`, headers: ADMIN })).statusCode).toBe(
      200,
    );
    expect(
      (await h.app.inject({ method: 'GET', url: `/episodes/${episode.id}/brief`, headers: ADMIN })).statusCode,
    ).toBe(200);
  });

  it('keeps grading inputs out of the brief: it holds only what the spec gave', async () => {
    const brief = (
      await h.app.inject({ method: 'GET', url: `/episodes/${episode.id}/brief`, headers: episode.headers })
    ).json();
    expect(Object.keys(brief).sort()).toEqual([
      'budget',
      'episode_id',
      'family',
      'limits',
      'manifest',
      'objective',
      'practice',
      'relevant_tokens',
      'seed',
      'target',
      'tools',
    ]);
    expect(brief.tools.map((t: { name: string }) => t.name)).toEqual([
      'read_weights',
      'write_weights',
      'run_target',
      'inspect_target',
    ]);
    expect(brief.relevant_tokens[0]).toEqual({ id: 9259, token: 'Hello' });
    // The spec schema itself refuses terminal items: the service never receives them.
    const withTerminal = await h.app.inject({
      method: 'POST',
      url: '/episodes',
      headers: ADMIN,
      payload: { family: 'x', seed: 0, objective: 'o', relevant_token_ids: [], practice: [], terminal: {} },
    });
    expect(withTerminal.statusCode).toBe(400);
    expect(withTerminal.json().message).toMatch(/additional properties \("terminal"\)/);
  });

  it('serves /health without a token', async () => {
    const health = (await h.app.inject({ method: 'GET', url: '/health' })).json();
    expect(health).toMatchObject({ status: 'ok', model: 'iwibench/tiny' });
  });
});
