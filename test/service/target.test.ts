// Loading the target: the tokenizer is built while the engine's worker starts; a tokenizer that cannot be built fails
// the load with its own error and leaves no engine worker behind, and a missing one is refused before the weights.
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EngineHost } from '../../engine/index.ts';
import { WeightStore } from '../../service/weights/index.ts';
import { Target } from '../../service/target.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

/** The tiny fixture's files in a folder of their own, with `tokenizer` written over tokenizer.json (or none). */
function checkpointWith(tokenizer: string | undefined): string {
  const from = fixtureCheckpoint('tiny');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-target-'));
  for (const file of ['config.json', 'model.safetensors', 'tokenizer_config.json'])
    copyFileSync(path.join(from, file), path.join(dir, file));
  if (tokenizer !== undefined) writeFileSync(path.join(dir, 'tokenizer.json'), tokenizer);
  return dir;
}

describe('Target.load', () => {
  afterEach(() => vi.restoreAllMocks());

  it('refuses a checkpoint without tokenizer.json before it reads the weights', async () => {
    const preload = vi.spyOn(WeightStore.prototype, 'preload');
    const start = vi.spyOn(EngineHost, 'start');
    await expect(Target.load({ modelDir: checkpointWith(undefined) })).rejects.toThrow(/tokenizer\.json is missing/);
    expect(preload).not.toHaveBeenCalled();
    expect(start).not.toHaveBeenCalled();
  });

  it('closes the engine it started when the tokenizer cannot be built', async () => {
    const close = vi.spyOn(EngineHost.prototype, 'close');
    await expect(Target.load({ modelDir: checkpointWith('{"model": ') })).rejects.toThrow(/JSON/);
    expect(close).toHaveBeenCalledTimes(1);
  });
});
