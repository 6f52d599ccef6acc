// The native addon as built by `npm ci` (engine/native/build.mjs): every instruction set's path compiled into it on
// any x86-64 machine (no -march=native), without a warning; the standard library's shared template code linked from
// the baseline objects (no copy of it holds an AVX instruction a lower path could then run); the portable path
// needing no x86 header, so the addon still builds on another architecture; and the install script, run again by
// the first `npx iwibench` in a clone, keeping the addon built from the same sources.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STAMP_FILE, sourcesDigest } from '../../engine/native/build-stamp.mjs';
import { REPO_ROOT } from '../fixtures.ts';

const native = path.join(REPO_ROOT, 'engine/native');
const addon = path.join(native, 'build/Release/iwibench_kernels.node');
// The file as `npm ci` built it (wherever g++ could): whether this process loaded it is kernels.test.ts's business.
const built = existsSync(addon);

describe.runIf(built && process.arch === 'x64')('the native addon', () => {
  it('holds every path (portable, AVX2, AVX-512, AMX) whatever this CPU runs', () => {
    const symbols = execFileSync('nm', ['-C', '--defined-only', addon], { encoding: 'utf8' });
    for (const path of ['iwi::portable::ops()', 'iwi::avx2::ops()', 'iwi::avx512::ops()', 'iwi::amx::products('])
      expect(symbols, path).toContain(path);
  });

  it('is kept when the install script runs again on the same sources (npx runs it in its cache), not rebuilt', () => {
    // Checked first: a stale stamp would make the run below rebuild the addon under the suite's other processes.
    const stamp = path.join(native, STAMP_FILE);
    expect(
      existsSync(stamp) && readFileSync(stamp, 'utf8'),
      `${STAMP_FILE}, the sources the addon was built from (a build older than the stamp: node engine/native/build.mjs)`,
    ).toBe(sourcesDigest(native));
    const before = statSync(addon);
    const again = spawnSync(process.execPath, [path.join(native, 'build.mjs')], {
      encoding: 'utf8',
      env: { ...process.env, npm_command: 'exec' },
    });
    expect(again.status).toBe(0);
    expect(again.stderr).toMatch(/^iwibench: native BF16 kernel up to date/);
    expect(statSync(addon)).toMatchObject({ ino: before.ino, mtimeMs: before.mtimeMs });
  });

  it('built without a warning', () => {
    const log = readFileSync(path.join(native, 'build.log'), 'utf8');
    expect(log.split('\n').filter((line) => /warning:/.test(line))).toEqual([]);
  });

  it('links no shared template code that holds an AVX instruction', () => {
    const weak = new Set(
      execFileSync('nm', ['--defined-only', addon], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => / [WV] /.test(line))
        .map((line) => line.split(' ').at(-1)!),
    );
    let current = '';
    const wide: string[] = [];
    for (const line of execFileSync('objdump', ['-d', '--no-show-raw-insn', addon], {
      encoding: 'utf8',
      maxBuffer: 256 * 2 ** 20,
    }).split('\n')) {
      const start = /^[0-9a-f]+ <(.+)>:$/.exec(line);
      if (start) current = start[1]!;
      else if (weak.has(current) && /%[yz]mm|%k[0-7]/.test(line)) wide.push(current);
    }
    expect([...new Set(wide)]).toEqual([]);
  });
});

it('compiles the portable path with no intrinsics header (the pool and the dispatch include theirs on x86 only)', () => {
  // g++ -H lists every header a translation unit includes, on stderr.
  const { stderr, status } = spawnSync(
    'g++',
    ['-std=c++17', '-E', '-H', path.join(native, 'isa-portable.cc'), '-o', '/dev/null'],
    { encoding: 'utf8' },
  );
  expect(status, stderr).toBe(0);
  expect(stderr.split('\n').filter((line) => /intrin\.h|cpuid\.h/.test(line))).toEqual([]);
}, 60_000);

it('stamps a build with its sources: a byte more in any of them is another build', () => {
  const copy = mkdtempSync(path.join(os.tmpdir(), 'iwibench-native-'));
  cpSync(native, copy, { recursive: true, filter: (from) => !from.includes(`${path.sep}build${path.sep}`) });
  expect(sourcesDigest(copy)).toBe(sourcesDigest(native));
  for (const name of ['arithmetic.h', 'isa-avx2.cc', 'binding.gyp', 'build.mjs']) {
    const file = path.join(copy, name);
    const before = readFileSync(file);
    appendFileSync(file, ' ');
    expect(sourcesDigest(copy), name).not.toBe(sourcesDigest(native));
    cpSync(path.join(native, name), file);
    expect(readFileSync(file)).toEqual(before);
  }
});
