import { existsSync, mkdirSync } from 'node:fs';
import { makeTinyCheckpoint } from '../service/model/tiny-checkpoint.ts';
import { FIXTURE_SEED, FIXTURES_DIR, fixtureCheckpoint } from './fixtures.ts';

export default function setup(): void {
  mkdirSync(FIXTURES_DIR, { recursive: true });
  for (const preset of ['tiny', 'tiny-4b'] as const) {
    const dir = fixtureCheckpoint(preset);
    if (!existsSync(dir)) makeTinyCheckpoint({ out: dir, preset, seed: FIXTURE_SEED });
  }
}
