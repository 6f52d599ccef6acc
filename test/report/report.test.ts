// `npx iwibench report` end to end on the 2 editors × 3 families × 2 seeds grid: the CSVs hold the hand-computed
// means, the sidecar holds version and arguments, and the same results give byte-identical CSVs.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsvRecords } from '../../report/csv.ts';
import { PACKAGE_VERSION } from '../../core/version.ts';
import { startCliHost, type CliHost } from '../cli-host.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { GRID, MODEL, attemptFolderName, tempDir, writeGrid, writeRuns } from './fixtures.ts';

let host: CliHost;
beforeAll(async () => (host = await startCliHost(REPO_ROOT)));
afterAll(() => host?.stop());

/** `npx iwibench report ARGS` in the file's command host (test/cli-host.ts); rejects with its stderr if it fails. */
const report = (args: string[]) => host.ok(['report', ...args]);

describe('npx iwibench report', () => {
  let root: string;
  let runs: { alpha: string; beta: string };
  let out: string;
  let stdout: string;

  beforeAll(async () => {
    root = tempDir('cli');
    runs = writeGrid(root);
    out = path.join(root, 'out');
    ({ stdout } = await report([
      runs.alpha,
      runs.beta,
      '--editor',
      'alpha',
      '--editor',
      'beta',
      '--output-dir',
      out,
      '--json',
    ]));
  });

  it('--json prints the output paths as JSON; every file is written', () => {
    const printed = JSON.parse(stdout);
    expect(printed).toMatchObject({
      results_csv: path.join(out, 'results.csv'),
      summary_csv: path.join(out, 'summary.csv'),
      html: path.join(out, 'report.html'),
      meta: path.join(out, 'report.json'),
      attempts: 12,
      skipped: [],
    });
    for (const file of [printed.results_csv, printed.summary_csv, printed.html, printed.meta])
      expect(readFileSync(file).length).toBeGreaterThan(0);
  });

  it('summary.csv: means per (target, editor, family) and over all families, as computed by hand', () => {
    const summary = readCsvRecords(path.join(out, 'summary.csv'));
    const get = (editor: string, family: string) => {
      const rows = summary.filter((r) => r.editor === editor && r.family === family);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ model_id: MODEL.id, revision: MODEL.revision });
      return rows[0]!;
    };
    // [n, mean reward, mean gain, mean retention], from the rewards listed next to GRID.
    const expected: Record<string, [number, number, number, number]> = {
      'alpha/alias_acquisition': [2, (0.5 + 0.1875) / 2, (0.5 + 0.25) / 2, (1 + 0.75) / 2],
      'alpha/lexical_inhibition': [2, (0.45 + 0) / 2, (0.5 + 0) / 2, (0.9 + 1) / 2],
      'alpha/local_factual_update': [2, (0.5 + 0.75) / 2, (1 + 0.75) / 2, (0.5 + 1) / 2],
      'alpha/all': [
        6,
        (0.5 + 0.1875 + 0.45 + 0 + 0.5 + 0.75) / 6,
        (0.5 + 0.25 + 0.5 + 0 + 1 + 0.75) / 6,
        (1 + 0.75 + 0.9 + 1 + 0.5 + 1) / 6,
      ],
      'beta/alias_acquisition': [2, (0.125 + 0) / 2, (0.125 + 0) / 2, 1],
      'beta/lexical_inhibition': [2, (0.40625 + 0.375) / 2, 0.5, (0.8125 + 0.75) / 2],
      'beta/local_factual_update': [2, (0.125 + 0.9) / 2, (0.25 + 1) / 2, (0.5 + 0.9) / 2],
      'beta/all': [
        6,
        (0.125 + 0 + 0.40625 + 0.375 + 0.125 + 0.9) / 6,
        (0.125 + 0 + 0.5 + 0.5 + 0.25 + 1) / 6,
        (1 + 1 + 0.8125 + 0.75 + 0.5 + 0.9) / 6,
      ],
    };
    expect(summary.map((r) => `${r.editor}/${r.family}`)).toEqual(Object.keys(expected)); // sorted, "all" last
    for (const [key, [n, reward, gain, retention]] of Object.entries(expected)) {
      const row = get(...(key.split('/') as [string, string]));
      expect(Number(row.n)).toBe(n);
      expect(Number(row.mean_reward)).toBeCloseTo(reward, 12);
      expect(Number(row.mean_gain)).toBeCloseTo(gain, 12);
      expect(Number(row.mean_retention)).toBeCloseTo(retention, 12);
      expect(Number(row.reward_ci95_low)).toBeLessThanOrEqual(Number(row.mean_reward));
      expect(Number(row.reward_ci95_high)).toBeGreaterThanOrEqual(Number(row.mean_reward));
    }
    // Two values {a, b}: resampled means are a, (a+b)/2 or b, with a and b a quarter each, so the 2.5 % and
    // 97.5 % quantiles are exactly the two values.
    expect([
      Number(get('alpha', 'alias_acquisition').reward_ci95_low),
      Number(get('alpha', 'alias_acquisition').reward_ci95_high),
    ]).toEqual([0.1875, 0.5]);
    expect([
      Number(get('beta', 'alias_acquisition').reward_ci95_low),
      Number(get('beta', 'alias_acquisition').reward_ci95_high),
    ]).toEqual([0, 0.125]);
  });

  it('results.csv: one sorted row per attempt with its score, retention parts, patch and resources', () => {
    const rows = readCsvRecords(path.join(out, 'results.csv'));
    expect(rows).toHaveLength(12);
    const order = [...GRID].sort((a, b) =>
      a.editor! + a.family < b.editor! + b.family
        ? -1
        : a.editor! + a.family > b.editor! + b.family
          ? 1
          : a.seed - b.seed,
    );
    expect(rows.map((r) => r.attempt)).toEqual(order.map(attemptFolderName));
    const row = rows.find((r) => r.editor === 'alpha' && r.family === 'alias_acquisition' && r.seed === '7')!;
    expect(row).toMatchObject({
      model_id: MODEL.id,
      revision: MODEL.revision,
      editor_model: 'alpha-model',
      params_key: 'alias_acquisition/params-2',
      reward: '0.1875',
      gain: '0.25',
      target_success_base: '0',
      target_success_edited: '0.25',
      retention_overall: '0.75',
      retention_general_controls: '0.75',
      retention_spillover: '0.75',
      retention_overrides: '0.75',
      changed_parameters: '10',
      tensors_changed: '1',
      patch_ops: '1',
      delta_frobenius: '0.5',
      max_relative_delta: '0.01',
      turns: '12',
      tool_calls: '20',
      forward_tokens: '5007',
      package_version: '0.1.0',
      family_version: '0.2.2',
    });
    expect(row.results_json).toBe(path.join(runs.alpha, 'attempts', row.attempt!, 'results.json'));
    // No base-correct preservation item: spillover is "not measured", an empty field, not a number.
    const noSpillover = rows.find((r) => r.editor === 'beta' && r.family === 'lexical_inhibition' && r.seed === '3')!;
    expect(noSpillover.retention_spillover).toBe('');
    expect(Number(noSpillover.retention_overall)).toBe(52 / 64);
  });

  it('report.json records the package version, the arguments and the inputs', () => {
    const meta = JSON.parse(readFileSync(path.join(out, 'report.json'), 'utf8'));
    expect(meta).toMatchObject({
      format: 'iwibench-report-meta/1',
      command: 'report',
      package_version: PACKAGE_VERSION,
      args: { runs: [runs.alpha, runs.beta], editor: ['alpha', 'beta'], 'output-dir': out },
      inputs: [runs.alpha, runs.beta],
      attempts: 12,
    });
    expect(Date.parse(meta.generated_at)).not.toBeNaN();
  });

  it('writes byte-identical CSVs for the same results', async () => {
    const again = path.join(root, 'again');
    await report([runs.beta, runs.alpha, '--editor', 'beta', '--editor', 'alpha', '--output-dir', again]);
    for (const name of ['results.csv', 'summary.csv'])
      expect(readFileSync(path.join(again, name), 'utf8')).toBe(readFileSync(path.join(out, name), 'utf8'));
  });

  it('--editor filters labelled attempts and names unlabelled ones', async () => {
    const only = path.join(root, 'only-alpha');
    const { stdout: printed, stderr } = await report([
      runs.alpha,
      runs.beta,
      '--editor',
      'alpha',
      '--output-dir',
      only,
    ]);
    expect(stderr).toMatch(/left out 6 results of other editors/);
    const kept = readCsvRecords(path.join(only, 'results.csv'));
    expect(new Set(kept.map((r) => r.editor))).toEqual(new Set(['alpha']));
    // Without --json, a summary: the files it wrote, then the counts.
    expect(printed).toBe(
      [
        'report:',
        `  wrote ${path.join(only, 'report.html')} (the scoreboard, with one page per attempt)`,
        `  wrote ${path.join(only, 'results.csv')} (one row per attempt)`,
        `  wrote ${path.join(only, 'summary.csv')} (mean reward per target, editor and family, with 95 % intervals)`,
        `  ${kept.length} attempts, 0 replays, 6 results of other editors left out`,
        '',
      ].join('\n'),
    );

    const bare = path.join(root, 'runs-bare');
    writeRuns(bare, [{ ...GRID[0]!, editor: null }]);
    const named = path.join(root, 'named');
    await report([bare, '--editor', 'gamma', '--output-dir', named]);
    expect(readCsvRecords(path.join(named, 'results.csv')).map((r) => r.editor)).toEqual(['gamma']);
    await expect(report([bare, runs.alpha, '--output-dir', path.join(root, 'x')])).rejects.toThrow(
      /has no editor label: pass exactly one --editor LABEL/,
    );
  });

  it('fails with a message naming an unreadable or foreign results.json', async () => {
    const bad = path.join(root, 'runs-bad');
    mkdirSync(path.join(bad, 'attempts', 'a'), { recursive: true });
    const file = path.join(bad, 'attempts', 'a', 'results.json');
    writeFileSync(file, '{"format": "iwibench-results/1", ');
    await expect(report([bad, '--output-dir', path.join(root, 'y')])).rejects.toThrow(
      new RegExp(`${escape(file)} is not readable as JSON`),
    );
    writeFileSync(file, JSON.stringify({ format: 'mmlu-pro-results/1' }));
    await expect(report([bad, '--output-dir', path.join(root, 'y')])).rejects.toThrow(
      new RegExp(`${escape(file)} has format "mmlu-pro-results/1"`),
    );
    rmSync(bad, { recursive: true });
    await expect(report([bad, '--output-dir', path.join(root, 'y')])).rejects.toThrow(/RUNS folder .* does not exist/);
  });
});

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
