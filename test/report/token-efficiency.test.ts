// `npx iwibench report-token-efficiency`: hand-made traces with known usage, joined to the report's results.csv,
// give exact token totals and reward per 1,000 editor tokens; target forward tokens stay apart.
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Usage } from '../../taskset/harness/trace.ts';
import { readCsvRecords } from '../../report/csv.ts';
import {
  findAttempts,
  readTraceUsage,
  tokenEfficiency,
  writeReport,
  type ResultsCsvRecord,
} from '../../report/index.ts';
import { PACKAGE_VERSION } from '../../core/version.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { GRID, attemptFolderName, tempDir, writeGrid, writeTrace } from './fixtures.ts';

const exec = promisify(execFile);
const cli = path.join(REPO_ROOT, 'bin/iwibench.js');

const usage = (input: number, cached: number, output: number, reasoning: number): Usage => ({
  input_tokens: input,
  cached_input_tokens: cached,
  output_tokens: output,
  reasoning_tokens: reasoning,
});

/** Calls per alpha attempt, by family and seed; 'error' is a request that failed after retries. */
const CALLS: Record<string, (Usage | 'error')[]> = {
  'alias_acquisition/3': [usage(1000, 200, 300, 100), usage(2000, 1500, 500, 0), 'error'], // 3000 in + 800 out = 3800
  'alias_acquisition/7': [usage(500, 0, 250, 50)], // 750
  'lexical_inhibition/3': [usage(4000, 0, 0, 0)], // 4000
  'lexical_inhibition/7': [usage(1500, 500, 500, 500)], // 2000
  'local_factual_update/3': [usage(1200, 0, 800, 0)], // 2000
  'local_factual_update/7': [usage(3000, 3000, 1000, 0), usage(0, 0, 0, 0)], // 4000
};

describe('report-token-efficiency', () => {
  let root: string;
  let runs: { alpha: string; beta: string };
  let resultsCsv: string;

  beforeAll(() => {
    root = tempDir('tokens');
    runs = writeGrid(root);
    for (const a of GRID.filter((g) => g.editor === 'alpha'))
      writeTrace(path.join(runs.alpha, 'attempts', attemptFolderName(a)), CALLS[`${a.family}/${a.seed}`]!);
    resultsCsv = writeReport({
      runs: [runs.alpha, runs.beta],
      editors: [],
      outputDir: path.join(root, 'report'),
      invocation: { command: 'report', args: {} },
    }).results_csv;
  });

  it('sums a trace: requests, failed requests and the four usage counts of its responses', () => {
    const file = path.join(runs.alpha, 'attempts', attemptFolderName(GRID[0]!), 'trace.jsonl');
    expect(readTraceUsage(file)).toEqual({
      requests: 3,
      failed_requests: 1,
      input_tokens: 3000,
      cached_input_tokens: 1700,
      output_tokens: 800,
      reasoning_tokens: 100,
    });
  });

  it('writes exact totals and reward per 1,000 editor tokens per attempt, per family and overall', async () => {
    const output = path.join(root, 'tokens.csv');
    // The beta attempts (no traces) sit in another folder: passing it shows they are left out, not read.
    const { stdout } = await exec(process.execPath, [
      cli,
      'report-token-efficiency',
      '--editor',
      'alpha',
      resultsCsv,
      path.join(runs.alpha, 'attempts'),
      path.join(runs.beta, 'attempts'),
      '--output',
      output,
      '--json',
    ]);
    const rows = readCsvRecords(output);
    const attempt = (family: string, seed: number) =>
      rows.find((r) => r.scope === 'attempt' && r.family === family && r.seed === String(seed))!;
    expect(rows.filter((r) => r.scope === 'attempt')).toHaveLength(6);

    expect(attempt('alias_acquisition', 3)).toMatchObject({
      editor: 'alpha',
      attempt: 'alias_acquisition-s3-alpha-a0',
      n: '1',
      editor_requests: '3',
      editor_failed_requests: '1',
      input_tokens: '3000',
      cached_input_tokens: '1700',
      output_tokens: '800',
      reasoning_tokens: '100',
      editor_tokens: '3800',
      mean_reward: '0.5',
      target_forward_tokens: '5003',
    });
    expect(Number(attempt('alias_acquisition', 3).reward_per_1k_editor_tokens)).toBeCloseTo((1000 * 0.5) / 3800, 12);
    expect(Number(attempt('alias_acquisition', 7).reward_per_1k_editor_tokens)).toBe((1000 * 0.1875) / 750);
    expect(attempt('lexical_inhibition', 7)).toMatchObject({
      editor_tokens: '2000',
      mean_reward: '0',
      reward_per_1k_editor_tokens: '0',
    });

    const family = rows.find((r) => r.scope === 'family' && r.family === 'alias_acquisition')!;
    expect(family).toMatchObject({
      seed: '',
      attempt: '',
      n: '2',
      editor_requests: '4',
      input_tokens: '3500',
      cached_input_tokens: '1700',
      output_tokens: '1050',
      reasoning_tokens: '150',
      editor_tokens: '4550',
      target_forward_tokens: '10010',
    });
    expect(Number(family.mean_reward)).toBe((0.5 + 0.1875) / 2);
    expect(Number(family.reward_per_1k_editor_tokens)).toBeCloseTo((1000 * (0.5 + 0.1875)) / 4550, 12); // a ratio of sums

    const all = rows.filter((r) => r.scope === 'all');
    expect(all).toHaveLength(1);
    expect(all[0]).toMatchObject({
      family: 'all',
      n: '6',
      editor_requests: '9',
      editor_tokens: String(3800 + 750 + 4000 + 2000 + 2000 + 4000),
    });
    expect(Number(all[0]!.reward_per_1k_editor_tokens)).toBeCloseTo(
      (1000 * (0.5 + 0.1875 + 0.45 + 0 + 0.5 + 0.75)) / 16550,
      12,
    );
    expect(rows.map((r) => r.scope)).toEqual([...Array(6).fill('attempt'), ...Array(3).fill('family'), 'all']);

    const summary = JSON.parse(stdout);
    expect(summary).toMatchObject({
      editor: 'alpha',
      attempts: 6,
      other_editors: 6,
      incomplete: [],
      rows_without_attempt: [],
      meta: path.join(root, 'tokens.json'),
    });
    expect(summary.overall[0].editor_tokens).toBe(16550);
    const meta = JSON.parse(readFileSync(path.join(root, 'tokens.json'), 'utf8'));
    expect(meta).toMatchObject({
      command: 'report-token-efficiency',
      package_version: PACKAGE_VERSION,
      args: { editor: 'alpha', results_csv: resultsCsv, output },
    });
  });

  it('lists unfinished attempt folders and CSV rows without a folder', () => {
    const attemptsDir = path.join(root, 'partial');
    const unfinished = path.join(attemptsDir, 'alias_acquisition-s9-alpha-a0');
    mkdirSync(unfinished, { recursive: true });
    const { attempts, incomplete } = findAttempts([attemptsDir, path.join(runs.alpha, 'attempts')]);
    expect(incomplete).toEqual([unfinished]);
    const records = readCsvRecords(resultsCsv) as ResultsCsvRecord[];
    const { rows, rowsWithoutAttempt } = tokenEfficiency('alpha', records, attempts.slice(0, 4));
    expect(rows.filter((r) => r.scope === 'attempt').map((r) => r.attempt)).toEqual(
      attempts.slice(0, 4).map((a) => a.id),
    );
    expect(rowsWithoutAttempt).toEqual(['local_factual_update-s3-alpha-a0', 'local_factual_update-s7-alpha-a0']);
  });

  it('fails clearly on a bad trace line, an attempt with no CSV row, or a missing trace', () => {
    const records = readCsvRecords(resultsCsv) as ResultsCsvRecord[];
    const copy = path.join(root, 'broken-attempts'); // this test breaks traces: a copy, not the shared folders
    cpSync(path.join(runs.alpha, 'attempts'), copy, { recursive: true });
    const { attempts } = findAttempts([copy]);
    expect(() =>
      tokenEfficiency(
        'alpha',
        records.filter((r) => r.attempt !== attempts[1]!.id),
        attempts,
      ),
    ).toThrow(new RegExp(`RESULTS_CSV has no row for editor "alpha", attempt "${attempts[1]!.id}"`));
    expect(() => tokenEfficiency('gamma', records, attempts)).toThrow(/has no row of editor "gamma"/);

    const broken = attempts[0]!.trace;
    appendFileSync(
      broken,
      JSON.stringify({
        type: 'response',
        usage: { input_tokens: 1, cached_input_tokens: 0, output_tokens: -1, reasoning_tokens: 0 },
      }) + '\n',
    );
    const line = readFileSync(broken, 'utf8').trimEnd().split('\n').length;
    expect(() => readTraceUsage(broken)).toThrow(`${broken}:${line}: response usage.output_tokens is -1`);
    const torn = attempts[3]!.trace;
    appendFileSync(torn, '{"type": "resp\n');
    expect(() => readTraceUsage(torn)).toThrow(
      `${torn}:${readFileSync(torn, 'utf8').trimEnd().split('\n').length} is not JSON`,
    );

    rmSync(attempts[2]!.trace);
    expect(() => tokenEfficiency('alpha', records, attempts.slice(2, 3))).toThrow(
      /has results.json but no trace.jsonl/,
    );
  });
});
