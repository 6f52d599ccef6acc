// Once per `vitest run`: the shared tiny checkpoints (kept between runs), and one temp folder for everything the
// run's tests and the processes they start write (TMPDIR points into it), removed at the end so runs leave nothing.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeTinyCheckpoint } from '../engine/index.ts';
import { FIXTURE_SEED, FIXTURES_DIR, fixtureCheckpoint } from './fixtures.ts';

export default function setup(): () => void {
  mkdirSync(FIXTURES_DIR, { recursive: true });
  for (const preset of ['tiny', 'tiny-4b'] as const) {
    const dir = fixtureCheckpoint(preset);
    if (!existsSync(dir)) makeTinyCheckpoint({ out: dir, preset, seed: FIXTURE_SEED });
  }
  process.env.IWIBENCH_TEST_FIXTURES_BASE = path.dirname(FIXTURES_DIR);
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-test-run-'));
  process.env.TMPDIR = runDir;
  // The speed probe's kept curves (engine/speed-cache.ts) start empty each run, and nothing lands in ~/.cache.
  process.env.IWIBENCH_CACHE_DIR = path.join(runDir, 'cache');
  return () => rmSync(runDir, { recursive: true, force: true });
}
