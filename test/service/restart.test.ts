import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT, fixtureCheckpoint } from '../fixtures.ts';
import { ADMIN, SPEC, TOKENS, chat } from './helpers.ts';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children) child.kill('SIGKILL');
});

/** `npx iwibench service` as a child process; resolves with its URL once it listens. */
async function startService(outputDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      path.join(REPO_ROOT, 'bin/iwibench.js'),
      'service',
      '--model-dir',
      fixtureCheckpoint('tiny'),
      '--output-dir',
      outputDir,
      '--port',
      '0',
      '--log-level',
      'warn',
    ],
    {
      env: { ...process.env, IWIBENCH_ADMIN_TOKEN: TOKENS.admin, IWIBENCH_EDITOR_TOKEN: TOKENS.editor },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  children.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`service exited with ${code}`)));
  });
  return { child, url: JSON.parse(line).url };
}

async function call(url: string, method: string, route: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(url + route, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, json: (await response.json()) as Record<string, any> };
}

describe('a killed service loses nothing', () => {
  it('restarts with the op log, the edited weights and the budget use intact', async () => {
    const outputDir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-restart-'));
    const first = await startService(outputDir);
    const created = await call(first.url, 'POST', '/episodes', ADMIN, SPEC);
    const id = created.json.id as string;
    const editor = { authorization: `Bearer ${TOKENS.editor}`, 'x-episode-key': created.json.episode_key as string };
    // An op with array operands first: its files are the first thing written in the episode's ops folder.
    await call(first.url, 'POST', `/episodes/${id}/tools/write_weights`, editor, {
      op: 'low_rank_add',
      tensor: 'model.layers.2.mlp.down_proj.weight',
      slice: [
        [0, 4],
        [0, 3],
      ],
      alpha: 0.5,
      u: [[1], [2], [3], [4]],
      v: [[0.5], [-0.5], [0.25]],
    });
    await call(first.url, 'POST', `/episodes/${id}/tools/write_weights`, editor, {
      op: 'fill',
      tensor: 'model.layers.1.mlp.up_proj.weight',
      slice: [
        [0, 3],
        [0, 5],
      ],
      value: 0.75,
    });
    const ran = await call(first.url, 'POST', `/episodes/${id}/tools/run_target`, editor, {
      sequences: [chat('Hello')],
      max_new_tokens: 4,
    });
    const slice = {
      op: 'slice',
      tensor: 'model.layers.2.mlp.down_proj.weight',
      slice: [
        [0, 4],
        [0, 3],
      ],
    };
    const before = await call(first.url, 'POST', `/episodes/${id}/tools/read_weights`, editor, slice);
    const usedBefore = before.json.budget.used;
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));

    const second = await startService(outputDir);
    const summary = await call(second.url, 'GET', `/episodes/${id}`, ADMIN);
    expect(summary.json.op_count).toBe(2);
    expect(summary.json.budget.used).toEqual(usedBefore);
    expect(summary.json.budget.used.forward_tokens).toBe(ran.json.result.forward_tokens);
    const after = await call(second.url, 'POST', `/episodes/${id}/tools/read_weights`, editor, slice);
    expect(after.json.result.values).toEqual(before.json.result.values);
    const rerun = await call(second.url, 'POST', `/episodes/${id}/tools/run_target`, editor, {
      sequences: [chat('Hello')],
      max_new_tokens: 4,
    });
    expect(rerun.json.result.outputs[0].text).toBe(ran.json.result.outputs[0].text);
  });
});
