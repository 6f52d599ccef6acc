import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Checkpoint, readNpy } from '../../engine/index.ts';
import { referenceForward } from '../reference/gemma3-forward.ts';
import { REPO_ROOT, fixtureCheckpoint } from '../fixtures.ts';

const run = promisify(execFile);
const cli = path.join(REPO_ROOT, 'bin/iwibench.js');

describe('npx iwibench logits / make-tiny-checkpoint', () => {
  it('writes [T, vocab] float32 logits as .npy that match the reference forward', async () => {
    const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-logits-')), 'logits.npy');
    const ids = [2, 105, 2364, 107, 9259, 1902, 106, 107, 105, 4368, 107, 818];
    const { stdout } = await run(process.execPath, [
      cli,
      'logits',
      '--model-dir',
      fixtureCheckpoint('tiny'),
      '--ids',
      ids.join(','),
      '--out',
      out,
      '--chunk',
      '5',
      '--precision',
      'float32', // the exact path, held to the float32 reference
    ]);
    expect(JSON.parse(stdout).shape).toEqual([12, 262144]);
    const { data, shape } = readNpy(readFileSync(out));
    expect(shape).toEqual([12, 262144]);
    const reference = referenceForward(Checkpoint.open(fixtureCheckpoint('tiny')), ids);
    let diff = 0;
    let scale = 0;
    for (let i = 0; i < data.length; i++) {
      diff = Math.max(diff, Math.abs(data[i]! - reference[i]!));
      scale = Math.max(scale, Math.abs(reference[i]!));
    }
    expect(diff / scale).toBeLessThan(1e-4);
  });

  it('makes the same checkpoint bit for bit from the same seed, and refuses bad flags', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-make-'));
    await run(process.execPath, [
      cli,
      'make-tiny-checkpoint',
      '--out',
      path.join(dir, 'a'),
      '--preset',
      'tiny',
      '--seed',
      '7',
    ]);
    expect(
      readFileSync(path.join(dir, 'a', 'model.safetensors')).equals(
        readFileSync(path.join(fixtureCheckpoint('tiny'), 'model.safetensors')),
      ),
    ).toBe(true);
    await expect(
      run(process.execPath, [cli, 'make-tiny-checkpoint', '--out', path.join(dir, 'b'), '--preset', 'huge']),
    ).rejects.toThrow(/--preset must be one of tiny, tiny-4b/);
    await expect(
      run(process.execPath, [cli, 'logits', '--model-dir', dir, '--ids', '1,x', '--out', 'x.npy']),
    ).rejects.toThrow(/--ids: "x" is not an integer/);
    await expect(run(process.execPath, [cli, 'logits', '--bogus'])).rejects.toThrow(/unknown flag --bogus/);
  });
});
