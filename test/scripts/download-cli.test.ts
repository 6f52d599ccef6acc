// The fetch as a user meets it, against the test Hub (test/hub-server.ts) through HF_ENDPOINT: `npx iwibench download`
// (a summary on stdout, progress lines on stderr off a terminal, --json), a command that takes --model fetching what
// it lacks before it starts (the service, which then serves it), the refusals as one line, and offline
// (HF_HUB_OFFLINE=1 or --offline) keeping the cache's own error, which names the download command.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, PINNED_REVISIONS } from '../../engine/index.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { TARGET_FLAG_DEFAULTS, openTarget } from '../../scripts/target-flags.ts';
import { filesOf, startHubServer, type HubServer } from '../hub-server.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin', 'iwibench.js');
const ID = 'google/gemma-3-1b-it';
const PINNED = PINNED_REVISIONS[ID]!;
const TOKEN = 'hf_granted0123456789';

let hub: HubServer;
let root: string;
beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'iwibench-download-cli-'));
  hub = await startHubServer({
    repos: [
      { id: ID, commits: { [PINNED]: filesOf(TOY_TARGET_DIR) }, refs: { main: PINNED }, gated: true, granted: [TOKEN] },
    ],
  });
});
afterAll(() => hub.close());

let caches = 0;
function environment(extra: Record<string, string | undefined> = {}) {
  const cacheDir = path.join(root, `cache-${caches++}`, 'hub');
  const env: NodeJS.ProcessEnv = { ...process.env, HF_ENDPOINT: hub.url, HF_HUB_CACHE: cacheDir, HF_TOKEN: TOKEN };
  for (const name of ['HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'HF_HOME']) delete env[name];
  for (const [name, value] of Object.entries(extra)) if (value === undefined) delete env[name];
  return { cacheDir, env: { ...env, ...Object.fromEntries(Object.entries(extra).filter(([, v]) => v !== undefined)) } };
}

async function iwibench(env: NodeJS.ProcessEnv, ...args: string[]) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('npx iwibench download', () => {
  it('fetches the pinned checkpoint, says what it wrote, and fetches nothing the second time; a refusal is one line', async () => {
    const { cacheDir, env } = environment();
    const [first, refused] = await Promise.all([
      iwibench(env, 'download', '--model', ID),
      iwibench(environment({ HF_TOKEN: undefined }).env, 'download', '--model', ID),
    ]);
    expect(first).toMatchObject({ code: 0 });
    const dir = path.join(cacheDir, 'models--google--gemma-3-1b-it', 'snapshots', PINNED);
    expect(first.stdout).toBe(`download:\n  wrote ${dir} (${ID} at ${PINNED}: 5 files fetched, 2.30 MB)\n`);
    expect(first.stderr).toMatch(new RegExp(`^${ID}: fetching 5 files, 2\\.30 MB, at ${PINNED}\\n`));
    expect(first.stderr).toMatch(new RegExp(`\\n${ID}: fetched 2\\.30 MB in \\d+ s\\n$`));
    expect(Checkpoint.open({ cacheDir, modelId: ID }).revision).toBe(PINNED);
    const before = hub.requests.length;
    const second = await iwibench(env, 'download', '--model', ID, '--json');
    expect(second).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(second.stdout)).toEqual({ model: ID, revision: PINNED, dir, fetched: [], fetched_bytes: 0 });
    expect(hub.requests.length).toBe(before);
    // No token for the gated repository: exit 1, and the error one line.
    expect(refused.code).toBe(1);
    expect(refused.stderr.split('\n').filter((line) => line.startsWith('iwibench download: '))).toEqual([
      `iwibench download: ${ID} is gated: accept its licence at ${hub.url}/${ID} while logged in, make a read token at https://huggingface.co/settings/tokens and set HF_TOKEN to it (or run hf auth login)`,
    ]);
  });
});

describe('a command that takes --model', () => {
  it('fetches what the cache lacks before it starts (the service, which then serves it)', async () => {
    const { cacheDir, env } = environment({
      IWIBENCH_ADMIN_TOKEN: 'a'.repeat(32),
      IWIBENCH_EDITOR_TOKEN: 'e'.repeat(32),
    });
    const service = spawn(
      process.execPath,
      [
        CLI,
        'service',
        '--model',
        ID,
        '--port',
        '0',
        '--output-dir',
        path.join(root, 'service'),
        '--log-level',
        'silent',
      ],
      { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    service.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    const ready = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      service.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk;
        if (stdout.includes('\n')) resolve(stdout.split('\n')[0]!);
      });
      service.once('exit', (code) => reject(new Error(`service exited with ${code}: ${stderr}`)));
    });
    service.kill('SIGTERM');
    expect(JSON.parse(ready)).toMatchObject({ model: ID, revision: PINNED });
    expect(stderr).toMatch(new RegExp(`^${ID}: fetching 5 files, 2\\.30 MB, at ${PINNED}\\n`));
    expect(Checkpoint.open({ cacheDir, modelId: ID }).revision).toBe(PINNED);
  });

  it('offline (HF_HUB_OFFLINE=1, or --offline) touches no network and names the download command', async () => {
    const before = hub.requests.length;
    const { cacheDir, env } = environment({ HF_HUB_OFFLINE: '1' });
    const result = await iwibench(env, 'calibrate', '--model', ID, '--output', path.join(root, 'c.json'));
    const refusal = `${ID} is not in the Hugging Face cache ${cacheDir} (no models--google--gemma-3-1b-it/; fetch it with npx iwibench download --model ${ID}, or pass --cache-dir or --model-dir)`;
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`iwibench calibrate: ${refusal}\n`);
    // --offline: the flag every command that takes --model has (scripts/target-flags.ts), in this process.
    const flags = { ...TARGET_FLAG_DEFAULTS, model: ID, 'cache-dir': environment().cacheDir, offline: true };
    await expect(openTarget(flags)).rejects.toThrow(
      /is not in the Hugging Face cache .* fetch it with npx iwibench download/,
    );
    expect(hub.requests.length).toBe(before);
  });
});
