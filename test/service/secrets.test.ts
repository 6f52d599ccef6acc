// Secrets at rest: episode keys stored only as SHA-256 hashes in owner-only files, no probing of episode ids by an
// editor, atomic-write leftovers removed at start, and state written by an older version (clear keys) migrated.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeJsonAtomic } from '../../core/files.ts';
import { ADMIN, TOKENS, harness, type Harness } from './helpers.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const stateFile = (h: Harness, id: string) => path.join(h.outputDir, 'episodes', id, 'state.json');

/** Close an app as a stopped service would; the shared target's weight store forgets the episode, as a new process's would. */
async function stop(service: Harness, id: string): Promise<void> {
  await service.app.close();
  service.target.store.dropEpisode(id);
}

let h: Harness;
beforeAll(async () => {
  h = await harness();
});
afterAll(() => h.app.close());

describe('episode keys at rest', () => {
  it('state.json holds the key only as its SHA-256, and only its owner can read it', async () => {
    const { id, headers } = await h.episode();
    const key = headers['x-episode-key']!;
    const text = readFileSync(stateFile(h, id), 'utf8');
    expect(text).not.toContain(key);
    const state = JSON.parse(text);
    expect(state.key).toBeUndefined();
    expect(state.key_sha256).toBe(sha256(key));
    expect(statSync(stateFile(h, id)).mode & 0o777).toBe(0o600);
    // Still 0600 after the rewrites every call makes.
    await h.app.inject({ method: 'POST', url: `/episodes/${id}/turn`, headers });
    expect(statSync(stateFile(h, id)).mode & 0o777).toBe(0o600);
    expect((await h.app.inject({ method: 'GET', url: `/episodes/${id}/brief`, headers })).statusCode).toBe(200);
    expect(
      (
        await h.app.inject({
          method: 'GET',
          url: `/episodes/${id}/brief`,
          headers: { ...headers, 'x-episode-key': key.slice(1) },
        })
      ).statusCode,
    ).toBe(403);
  });

  it('writeJsonAtomic creates a file with the mode asked for', () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-mode-')), 'secret.json');
    writeJsonAtomic(file, { a: 1 }, false, 0o600);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe('no probing which episode ids exist', () => {
  it('an editor gets the same status and message for an unknown episode as for another episode', async () => {
    const mine = await h.episode();
    const other = await h.episode();
    const unknown = 'ep-0123456789abcdef';
    const routes: [string, string, unknown?][] = [
      ['GET', 'brief'],
      ['GET', 'manifest?kind=norm'],
      ['POST', 'turn'],
      ['POST', 'tools/read_weights', { op: 'metadata' }],
      ['POST', 'tools/write_weights', { op: 'revert' }],
      ['POST', 'tools/run_target', { sequences: [{ prompt: 'Hi' }], max_new_tokens: 1 }],
      ['POST', 'tools/inspect_target', { sequences: [{ prompt: 'Hi' }] }],
      ['POST', 'submit'],
    ];
    for (const [method, route, payload] of routes) {
      const answer = async (id: string) => {
        const url = `/episodes/${id}/${route}`;
        const response = await h.app.inject({
          method: method as 'GET' | 'POST',
          url,
          headers: mine.headers,
          payload: payload as object,
        });
        return { status: response.statusCode, body: JSON.stringify(response.json()).replaceAll(id, '<id>') };
      };
      const foreign = await answer(other.id);
      expect(foreign.status, route).toBe(403);
      expect(await answer(unknown), route).toEqual(foreign);
    }
    // The admin, who may list every episode, still gets 404 for an unknown one.
    expect((await h.app.inject({ method: 'GET', url: `/episodes/${unknown}`, headers: ADMIN })).statusCode).toBe(404);
    const untouched = (await h.app.inject({ method: 'GET', url: `/episodes/${other.id}`, headers: ADMIN })).json();
    expect(untouched).toMatchObject({ status: 'active', op_count: 0, budget: { used: { turns: 0, tool_calls: 0 } } });
  });
});

describe('at start', () => {
  it("removes the temp files of killed atomic writes, leaving a live process's alone", async () => {
    const first = await harness();
    const { id } = await first.episode();
    await stop(first, id);
    const dir = path.join(first.outputDir, 'episodes', id);
    const deadPid = 99_999_999; // above Linux's pid_max: no such process
    const dead = [
      path.join(dir, `state.json.tmp-${deadPid}-1764500000000`),
      path.join(dir, 'ops', `000000.safetensors.tmp-${deadPid}`),
      path.join(first.outputDir, `service.json.tmp-${deadPid}-2`),
    ];
    const live = path.join(dir, `state.json.tmp-${process.ppid}-3`);
    mkdirSync(path.join(dir, 'ops'), { recursive: true });
    for (const file of [...dead, live]) writeFileSync(file, '{"torn": ');
    const second = await harness(first.outputDir);
    expect(dead.filter((file) => existsSync(file))).toEqual([]);
    expect(existsSync(live)).toBe(true);
    expect(second.registry.list().map((e) => e.id)).toEqual([id]);
    await second.app.close();
  });

  it('migrates state.json written with a clear key by an older version: the key keeps working and is hashed on disk', async () => {
    const first = await harness();
    const { id, headers } = await first.episode();
    await stop(first, id);
    const key = headers['x-episode-key']!;
    const { key_sha256: _, ...rest } = JSON.parse(readFileSync(stateFile(first, id), 'utf8'));
    writeFileSync(stateFile(first, id), JSON.stringify({ ...rest, key }, null, 2), { mode: 0o644 }); // as the older version left it
    const second = await harness(first.outputDir);
    const state = JSON.parse(readFileSync(stateFile(second, id), 'utf8'));
    expect(state.key).toBeUndefined();
    expect(state.key_sha256).toBe(sha256(key));
    expect(statSync(stateFile(second, id)).mode & 0o777).toBe(0o600);
    expect((await second.app.inject({ method: 'GET', url: `/episodes/${id}/brief`, headers })).statusCode).toBe(200);
    const wrong = { authorization: `Bearer ${TOKENS.editor}`, 'x-episode-key': 'not-the-key' };
    expect((await second.app.inject({ method: 'GET', url: `/episodes/${id}/brief`, headers: wrong })).statusCode).toBe(
      403,
    );
    await second.app.close();
  });
});
