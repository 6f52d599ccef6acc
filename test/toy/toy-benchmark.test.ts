// The benchmark for real on the committed toy target, through the real CLIs: calibration finds eligible episodes in
// every family, and on a local factual update the built-in rank-one editor earns a reward (fresh-process evaluation,
// through the demo) while the no-op earns nothing (through run-prime).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Calibration } from '../../taskset/calibration.ts';
import { FAMILY_IDS } from '../../taskset/types.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
const cli = (args: string[]) => exec(process.execPath, [CLI, ...args], { maxBuffer: 1 << 26 });
vi.setConfig({ testTimeout: 600_000, hookTimeout: 300_000 });

let work: string;
let calibration: Calibration;
beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-toy-bench-'));
  const output = path.join(work, 'calibration.json');
  await cli([
    'calibrate',
    '--model-dir',
    TOY_TARGET_DIR,
    '--seeds',
    '10',
    '--eligible-per-family',
    '3',
    '--output',
    output,
  ]);
  calibration = JSON.parse(readFileSync(output, 'utf8')) as Calibration;
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

type Results = {
  score: {
    gain: number;
    reward: number;
    retention: { overall: number };
    targetSuccess: { base: number; edited: number };
  };
  patch: { ops: number };
};
const runPrime = async (editor: string, seed: number) => {
  const out = path.join(work, editor.replace(/\W/g, '_'));
  await cli([
    'run-prime',
    '--family',
    'local_factual_update',
    '--seed',
    String(seed),
    '--model-dir',
    TOY_TARGET_DIR,
    '--output-dir',
    out,
    '--editor-model',
    editor,
  ]);
  return JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')) as Results;
};

describe('the benchmark on the toy target', () => {
  it('calibration finds three eligible parameter sets in every family within ten seeds', () => {
    expect(calibration.short).toEqual([]);
    for (const family of FAMILY_IDS) expect(calibration.families[family]!.selected, family).toHaveLength(3);
  });

  it('builtin:noop earns nothing on the first local factual update', async () => {
    const seed = calibration.families.local_factual_update!.selected[0]!.seed;
    expect(seed).toBe(0);
    const noop = await runPrime('builtin:noop', seed);
    expect(noop.patch.ops).toBe(0);
    expect(noop.score.gain).toBe(0);
    expect(noop.score.reward).toBe(0);
  });

  it('demo calibrates the toy, runs builtin:rank-one and reports the documented reward it earned', async () => {
    const out = path.join(work, 'demo');
    const { stdout } = await cli([
      'demo',
      '--output-dir',
      out,
      '--families',
      'local_factual_update,lexical_inhibition',
    ]);
    const summary = {
      report_html: path.join(out, 'report', 'report.html'),
      results_csv: path.join(out, 'report', 'results.csv'),
    };
    const demoCalibration = JSON.parse(readFileSync(path.join(out, 'calibration.json'), 'utf8')) as Calibration;
    expect(demoCalibration.episodes.map((e) => e.family).sort()).toEqual([
      'lexical_inhibition',
      'local_factual_update',
    ]);
    const [header, ...rows] = readFileSync(summary.results_csv, 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split(','));
    const reward = (family: string) =>
      Number(rows.find((r) => r[header!.indexOf('family')] === family)![header!.indexOf('reward')]);
    // The run is deterministic, the same bits on every machine (arithmetic bf16/3): the figures of
    // docs/toy-target.md's table (seed 0), 15 of the 24 targets moved; the README gives the demo's rewards.
    const rankOne = JSON.parse(
      readFileSync(path.join(out, 'attempts', 'local_factual_update-s0-builtin_rank-one-a0', 'results.json'), 'utf8'),
    ) as Results;
    expect(rankOne.patch.ops).toBeGreaterThan(0);
    expect(rankOne.score.targetSuccess).toMatchObject({ base: 0, edited: 15 / 24 });
    expect(rankOne.score.gain).toBe(15 / 24);
    expect(rankOne.score.retention.overall).toBeCloseTo(0.947, 3);
    expect(rankOne.score.reward).toBeCloseTo(0.592, 3);
    expect(reward('local_factual_update')).toBe(rankOne.score.reward);
    expect(reward('lexical_inhibition')).toBe(0);
    expect(readFileSync(summary.report_html, 'utf8')).toContain(reward('local_factual_update').toFixed(3));
    // The summary on stdout: what it wrote where, then each attempt's figures as its results.json has them.
    const lines = stdout.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'demo:',
      `  wrote ${summary.report_html} (the scoreboard, with one page per attempt)`,
      `  wrote ${summary.results_csv} (one row per attempt)`,
      `  wrote ${path.join(out, 'attempts')} (one folder per attempt: trace, patch, results.json)`,
    ]);
    const mean = (reward('local_factual_update') + reward('lexical_inhibition')) / 2;
    expect(lines).toContain(`  2 attempts, 0 failed, mean reward ${mean.toFixed(3)}`);
    expect(lines).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^  local_factual_update-s0-builtin_rank-one-a0: reward ${reward('local_factual_update').toFixed(3)}, gain 0\\.625, retention 0\\.947 \\(\\d+ of \\d+ base-correct items kept\\)$`,
        ),
      ),
    );
  });
});
