// The speed probe's curve kept per machine and model shape (engine/speed-cache.ts): measured once, read back by the
// next process; measured again for another key, for more rows than it covers, or over a file that is not an entry.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SpeedPoint } from '../../engine/batch-limit.ts';
import { parseGemma3Config } from '../../engine/config.ts';
import { resolveSettings } from '../../engine/settings.ts';
import {
  cachedSpeedCurve,
  curveCovers,
  SPEED_CACHE_FORMAT,
  speedCacheDir,
  engineCodeDigest,
  speedKey,
} from '../../engine/speed-cache.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'iwibench-speed-cache-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const curve = (points: [number, number][]): SpeedPoint[] =>
  points.map(([rows, tokensPerSecond]) => ({ rows, tokensPerSecond }));
const RISING = curve([
  [8, 10],
  [16, 18],
  [32, 30],
  [64, 40],
  [128, 41],
]);

/** A probe that hands out `points` up to maxRows and counts its calls. */
function countingProbe(points: SpeedPoint[]) {
  const calls: number[] = [];
  const probe = async (maxRows: number) => {
    calls.push(maxRows);
    return points.filter((point) => point.rows <= maxRows);
  };
  return { probe, calls };
}

describe('curveCovers', () => {
  it('covers what the probe would not measure further: all row counts, past a fall, or rows that do not fit', () => {
    expect(curveCovers(RISING, 1000, 5000)).toBe(true); // every row count measured
    expect(curveCovers(RISING.slice(0, 3), 32, 32)).toBe(true); // 64 rows fit in neither
    expect(curveCovers(RISING.slice(0, 3), 32, 64)).toBe(false); // they fit now: measure 64
    // Stopped by a fall at 16 rows (its second measurement may have risen since): more memory measures nothing more.
    const fell = curve([
      [8, 30],
      [16, 29],
    ]);
    expect(curveCovers(fell, 1000, 5000)).toBe(true);
    expect(curveCovers([], 1000, 1000)).toBe(false);
  });
});

describe('cachedSpeedCurve', () => {
  const key = { cpu: 'test', config: { hidden_size: 8 } };

  it('measures once and keeps the curve; the next call reads it back without probing', async () => {
    const dir = path.join(root, 'once');
    const { probe, calls } = countingProbe(RISING);
    const first = await cachedSpeedCurve(key, 128, probe, dir);
    expect(first).toMatchObject({ curve: RISING, cached: false });
    const entry = JSON.parse(readFileSync(first.file, 'utf8'));
    expect(entry).toMatchObject({ format: SPEED_CACHE_FORMAT, key, curve: RISING, max_rows: 128 });
    const second = await cachedSpeedCurve(key, 128, probe, dir);
    expect(second).toEqual({ ...first, cached: true });
    expect(calls).toEqual([128]);
    // Fewer rows fit now: the kept points past them are left out, as the probe would not have measured them.
    const fewer = await cachedSpeedCurve(key, 40, probe, dir);
    expect(fewer).toMatchObject({ curve: RISING.slice(0, 3), cached: true });
    expect(calls).toEqual([128]);
  });

  it('measures again for another key, or for more rows than the kept curve was measured for', async () => {
    const dir = path.join(root, 'again');
    const { probe, calls } = countingProbe(RISING);
    await cachedSpeedCurve(key, 32, probe, dir);
    expect((await cachedSpeedCurve(key, 32, probe, dir)).cached).toBe(true);
    const more = await cachedSpeedCurve(key, 128, probe, dir);
    expect(more).toMatchObject({ curve: RISING, cached: false });
    expect((await cachedSpeedCurve(key, 128, probe, dir)).cached).toBe(true);
    const other = await cachedSpeedCurve({ ...key, cpu: 'another' }, 128, probe, dir);
    expect(other.cached).toBe(false);
    expect(calls).toEqual([32, 128, 128]);
    expect(readdirSync(dir).filter((name) => name.endsWith('.json'))).toHaveLength(2);
  });

  it('measures over a file that is not an entry of this key, and replaces it', async () => {
    const dir = path.join(root, 'bad');
    const { probe, calls } = countingProbe(RISING);
    const { file } = await cachedSpeedCurve(key, 128, probe, dir);
    const entry = JSON.parse(readFileSync(file, 'utf8'));
    for (const bad of [
      '{ not json',
      JSON.stringify({ ...entry, curve: [] }),
      JSON.stringify({ ...entry, curve: [{ rows: 0, tokensPerSecond: 1 }] }),
      JSON.stringify({ ...entry, format: 'other/1' }),
      JSON.stringify({ ...entry, max_rows: undefined }),
      JSON.stringify({ ...entry, key: { ...key, cpu: 'edited' } }),
    ]) {
      writeFileSync(file, bad);
      expect((await cachedSpeedCurve(key, 128, probe, dir)).cached).toBe(false);
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ key, curve: RISING });
    }
    expect(calls).toHaveLength(7);
  });

  it('hands the curve back when its folder cannot be written, and says so on stderr', async () => {
    const blocked = path.join(root, 'a-file');
    writeFileSync(blocked, 'not a folder');
    const { probe, calls } = countingProbe(RISING);
    const said: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((text: string) => (said.push(text), true)) as typeof process.stderr.write;
    try {
      expect(await cachedSpeedCurve(key, 128, probe, path.join(blocked, 'speed'))).toMatchObject({
        curve: RISING,
        cached: false,
      });
    } finally {
      process.stderr.write = write;
    }
    expect(calls).toEqual([128]);
    expect(said.join('')).toMatch(/the speed curve is not kept/);
  });

  it('keeps nothing from an empty curve', async () => {
    const dir = path.join(root, 'empty');
    const { probe, calls } = countingProbe([]);
    expect((await cachedSpeedCurve(key, 128, probe, dir)).cached).toBe(false);
    expect((await cachedSpeedCurve(key, 128, probe, dir)).cached).toBe(false);
    expect(calls).toHaveLength(2);
  });
});

describe('speedKey and speedCacheDir', () => {
  it('names the engine’s code: its digest changes with any TypeScript file or the kernel’s source', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-code-'));
    try {
      mkdirSync(path.join(dir, 'native'));
      writeFileSync(path.join(dir, 'a.ts'), 'export const a = 1;');
      writeFileSync(path.join(dir, 'native/products.h'), '// kernel');
      writeFileSync(path.join(dir, 'notes.md'), 'not code');
      const first = engineCodeDigest(dir);
      writeFileSync(path.join(dir, 'notes.md'), 'still not code');
      expect(engineCodeDigest(dir)).toBe(first);
      writeFileSync(path.join(dir, 'native/products.h'), '// kernel, faster');
      const second = engineCodeDigest(dir);
      expect(second).not.toBe(first);
      writeFileSync(path.join(dir, 'b.ts'), '');
      expect(engineCodeDigest(dir)).not.toBe(second);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keys by the model shape and the settings, and lives under IWIBENCH_CACHE_DIR, XDG_CACHE_HOME or ~/.cache', () => {
    const config = parseGemma3Config(
      JSON.parse(readFileSync(path.join(fixtureCheckpoint('tiny'), 'config.json'), 'utf8')),
    );
    const settings = resolveSettings({});
    expect(speedKey(config, settings)).toEqual(speedKey(config, settings));
    expect(speedKey(config, settings)).not.toEqual(
      speedKey(config, resolveSettings({ threads: settings.threads + 1 })),
    );
    expect(speedKey(config, settings)).not.toEqual(speedKey({ ...config, hidden_size: 16 }, settings));
    expect(speedKey(config, settings).code).toMatch(/^[0-9a-f]{64}$/);
    expect(speedCacheDir({ IWIBENCH_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x' })).toBe('/c/speed');
    expect(speedCacheDir({ XDG_CACHE_HOME: '/x' })).toBe('/x/iwibench/speed');
    expect(speedCacheDir({})).toBe(path.join(os.homedir(), '.cache', 'iwibench', 'speed'));
  });
});
