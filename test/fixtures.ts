// Tiny checkpoints shared by the test files, made once per run by test/global-setup.ts with the project's own
// generator. The folder name carries a digest of the generator's source, so a change to it makes fresh fixtures.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '..');
export const SHARED_DIR = path.resolve(REPO_ROOT, '..', 'shared');

const generatorDigest = createHash('sha256')
  .update(readFileSync(path.join(REPO_ROOT, 'engine/tiny-checkpoint.ts')))
  .digest('hex')
  .slice(0, 12);

export const FIXTURE_SEED = 7;
// Beside the run's own temp folder (global-setup.ts points TMPDIR into it), so the fixtures outlive the run.
const FIXTURES_BASE = process.env.IWIBENCH_TEST_FIXTURES_BASE ?? os.tmpdir();
export const FIXTURES_DIR = path.join(FIXTURES_BASE, `iwibench-fixtures-${generatorDigest}`);

export type FixturePreset = 'tiny' | 'tiny-4b';
export function fixtureCheckpoint(preset: FixturePreset): string {
  return path.join(FIXTURES_DIR, preset);
}

/** Bit-identical float arrays: vitest's deep equality takes ~45 s on the 6 M logits of 23 tiny-checkpoint positions. */
export function sameBits(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

/**
 * The SHA-256 of a float array's bytes: equal digests, the same bits. A test that compares many rows of logits keeps
 * their digests rather than copies (a tiny checkpoint's row is 1 MiB: a copy costs ~3 ms in fresh pages, a digest ~0.6).
 */
export function bitsDigest(a: Float32Array): string {
  return createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex');
}

/** max |a − b| relative to max |b|. */
export function relativeError(a: Float32Array, b: Float32Array): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(b[i]!));
  }
  return diff / scale;
}

/** A seeded stream of numbers in [0, 1) (mulberry32), for test data that is the same on every run. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
