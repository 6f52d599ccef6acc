// The engine runs on the CPU only (docs/engine.md, "GPU"): any other device is refused with one message, by the
// engine and by the service's target before it loads a single weight.
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../../../service/model/checkpoint.ts';
import { Gemma3Engine } from '../../../service/model/runtime.ts';
import { Target } from '../../../service/target.ts';
import { fixtureCheckpoint } from '../../fixtures.ts';

describe('--device', () => {
  it('the engine refuses cuda and names the flag', async () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    try {
      await expect(Gemma3Engine.create({ checkpoint, device: 'cuda' })).rejects.toThrow(
        /^--device cuda is not supported: the engine runs its BF16 projections on the CPU/,
      );
    } finally {
      checkpoint.close();
    }
  });

  it('the target refuses it before opening the checkpoint (a missing folder is not what it reports)', async () => {
    await expect(Target.load({ modelDir: '/nonexistent/iwibench-checkpoint' }, { device: 'cuda' })).rejects.toThrow(
      /^--device cuda is not supported/,
    );
  });
});
