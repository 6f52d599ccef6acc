// The golden check of the bits themselves (test/golden/arithmetic.json): on every path this CPU runs, the logits and
// greedy tokens of fixed checkpoints and ids hash to what was committed, in both precisions, under the arithmetic's
// committed names. A machine without AMX so checks the hashes an AMX machine would make, and the other way round.
// (The JavaScript fallback's were confirmed by test/golden/arithmetic-hashes.ts with IWIBENCH_NATIVE=0; its 262,144
// vocabulary's head takes minutes in JavaScript, so the suite checks the fallback against the addon on a short
// generation instead: fallback.test.ts.)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CPU_ARITHMETIC } from '../../engine/arithmetic.ts';
import { kernelInfo, useIsa } from '../../engine/kernels.ts';
import { CASES, GOLDEN_FILE, caseHashes, type Hashes } from '../golden/arithmetic-hashes.ts';
import { REPO_ROOT, fixtureCheckpoint, type FixturePreset } from '../fixtures.ts';

const golden = JSON.parse(readFileSync(GOLDEN_FILE, 'utf8')) as { arithmetic: Record<string, string>; hashes: Hashes };
const info = kernelInfo();
const paths = info.available.filter((isa) => isa !== 'javascript');
const dir = (preset: string) => fixtureCheckpoint(preset as FixturePreset);

afterAll(() => {
  if (info.isa !== 'javascript') useIsa(info.isa);
});

it('names the arithmetic the hashes were made under (a changed hash needs a new name)', () => {
  expect(golden.arithmetic).toEqual(CPU_ARITHMETIC);
});

describe.each(paths.length ? paths : ['javascript'])('on the %s path', (isa) => {
  it.each(CASES)('$name hashes to the committed bits', async ({ preset, precision, name }) => {
    if (isa !== 'javascript') useIsa(isa);
    expect(await caseHashes(dir(preset), precision), `${name} on ${isa}`).toEqual(golden.hashes[name]);
  });
});

it('lists where the hashes were confirmed', () => {
  const record = JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/golden/arithmetic.json'), 'utf8')) as {
    confirmed: { paths: string[]; cpu: string; date: string }[];
  };
  expect(record.confirmed.length).toBeGreaterThan(0);
  for (const entry of record.confirmed) expect(entry.paths.length).toBeGreaterThan(0);
});
