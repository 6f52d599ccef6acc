// The engine on the JavaScript fallback kernel (IWIBENCH_NATIVE=0, as on a machine where the addon cannot build)
// gives the very outputs of the native addon's path: one arithmetic, the same bits (golden-bits.test.ts checks every
// native path against the committed hashes).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fixtureCheckpoint, REPO_ROOT } from '../fixtures.ts';

const generate = (env: NodeJS.ProcessEnv) =>
  execFileSync(
    process.execPath,
    [
      path.join(REPO_ROOT, 'bin/iwibench.js'),
      'generate',
      '--model-dir',
      fixtureCheckpoint('tiny'),
      '--prompt',
      'Name a colour.',
      '--prompt',
      'Hi',
      '--max-new-tokens',
      '6',
    ],
    { env: { ...process.env, ...env }, encoding: 'utf8' },
  );

describe('the engine on the fallback kernel', () => {
  it('generates exactly what it generates on the native kernel', () => {
    const native = generate({});
    const fallback = generate({ IWIBENCH_NATIVE: '0' });
    expect(native.trim().split('\n')).toHaveLength(2);
    expect(fallback).toBe(native);
  });
});
