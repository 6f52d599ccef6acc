// `npx iwibench service` as a user starts it: the toy target found in a Hugging Face cache under $HF_HOME by its id,
// the start line naming the model and revision it loaded, and a real `kill` of the npx process stopping the server
// (npm exec passes no signals on; bin/iwibench.js takes the end of its npm parent as SIGTERM).
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { PINNED_REVISIONS } from '../../engine/index.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { addSnapshot } from '../hf-cache.ts';

const ID = 'google/gemma-3-4b-it';

describe('npx iwibench service', () => {
  it('names the model it loaded, and stops when the npx process is killed', { timeout: 120_000 }, async () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'iwibench-hf-home-'));
    addSnapshot(path.join(home, 'hub'), ID, PINNED_REVISIONS[ID]!, TOY_TARGET_DIR, ['main']);
    const env = {
      ...process.env,
      HF_HOME: home,
      HF_HUB_CACHE: '',
      IWIBENCH_ADMIN_TOKEN: 'admin-token-for-test',
      IWIBENCH_EDITOR_TOKEN: 'editor-token-for-test',
    };
    const npx = spawn(
      'npx',
      [
        'iwibench',
        'service',
        '--model',
        ID,
        '--port',
        '0',
        '--output-dir',
        path.join(home, 'service'),
        '--log-level',
        'warn',
      ],
      { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: npx.stdout! }).once('line', resolve);
      npx.once('exit', (code) => reject(new Error(`npx exited with ${code} before the service listened`)));
    });
    const started = JSON.parse(first);
    expect(started).toMatchObject({
      model: ID,
      revision: PINNED_REVISIONS[ID],
      output_dir: path.join(home, 'service'),
    });
    const health = await (await fetch(`${started.url}/health`)).json();
    expect(health).toMatchObject({ model: ID, revision: PINNED_REVISIONS[ID] });

    const exited = new Promise((resolve) => npx.once('exit', resolve));
    npx.kill('SIGTERM'); // the npx process, as `kill %1` after `npx iwibench service &`
    await exited;
    // The server goes down on its own: poll until the connection is refused (vitest's timeout bounds the wait).
    for (;;) {
      const answered = await fetch(`${started.url}/health`).then(
        () => true,
        () => false,
      );
      if (!answered) break;
      await sleep(200);
    }
  });
});
