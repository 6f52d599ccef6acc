// `report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR` repeated, one group per editor (as the seed's
// commands do): one CSV with every editor's rows, each editor's totals its own, and a malformed group named.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Usage } from '../../taskset/harness/trace.ts';
import { readCsvRecords } from '../../report/csv.ts';
import { writeReport } from '../../report/index.ts';
import { editorGroups } from '../../scripts/report-token-efficiency.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { GRID, attemptFolderName, tempDir, writeGrid, writeTrace } from '../report/fixtures.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
const usage = (input: number, output: number): Usage => ({
  input_tokens: input,
  cached_input_tokens: 0,
  output_tokens: output,
  reasoning_tokens: 0,
});

describe('report-token-efficiency with several editors', () => {
  let root: string;
  let csv: { alpha: string; beta: string };
  let attempts: { alpha: string; beta: string };

  beforeAll(() => {
    root = tempDir('tokens-many');
    const runs = writeGrid(root);
    attempts = { alpha: path.join(runs.alpha, 'attempts'), beta: path.join(runs.beta, 'attempts') };
    // Every alpha attempt used 1,000 editor tokens, every beta attempt 4,000.
    for (const a of GRID)
      writeTrace(path.join(a.editor === 'alpha' ? attempts.alpha : attempts.beta, attemptFolderName(a)), [
        a.editor === 'alpha' ? usage(800, 200) : usage(3000, 1000),
      ]);
    const report = (editor: 'alpha' | 'beta') =>
      writeReport({
        runs: [runs[editor]],
        editors: [editor],
        outputDir: path.join(root, `report-${editor}`),
        invocation: { command: 'report', args: {} },
      }).results_csv;
    csv = { alpha: report('alpha'), beta: report('beta') };
  });

  it('takes one --editor group per editor and writes every editor into one CSV', async () => {
    const output = path.join(root, 'tokens.csv');
    const { stdout } = await exec(process.execPath, [
      CLI,
      'report-token-efficiency',
      '--editor',
      'alpha',
      csv.alpha,
      attempts.alpha,
      '--editor',
      'beta',
      csv.beta,
      attempts.beta,
      '--output',
      output,
      '--json',
    ]);
    const rows = readCsvRecords(output);
    const overall = rows.filter((r) => r.scope === 'all');
    expect(overall.map((r) => [r.editor, r.editor_tokens])).toEqual([
      ['alpha', String(1000 * GRID.filter((a) => a.editor === 'alpha').length)],
      ['beta', String(4000 * GRID.filter((a) => a.editor === 'beta').length)],
    ]);
    const summary = JSON.parse(stdout);
    expect(summary.editors.map((e: { editor: string; other_editors: number }) => [e.editor, e.other_editors])).toEqual([
      ['alpha', 0],
      ['beta', 0],
    ]);
    const meta = JSON.parse(readFileSync(path.join(root, 'tokens.json'), 'utf8'));
    expect(meta.args.editors).toEqual([
      { editor: 'alpha', results_csv: csv.alpha, attempts_dirs: [attempts.alpha] },
      { editor: 'beta', results_csv: csv.beta, attempts_dirs: [attempts.beta] },
    ]);
  });

  it('splits the groups from the other flags and names a group with too few parts', () => {
    expect(
      editorGroups(['--editor', 'a', 'A.csv', 'A1', 'A2', '--output', 'F', '--editor', 'b', 'B.csv', 'B1']),
    ).toEqual({
      groups: [
        { editor: 'a', resultsCsv: 'A.csv', attemptsDirs: ['A1', 'A2'] },
        { editor: 'b', resultsCsv: 'B.csv', attemptsDirs: ['B1'] },
      ],
      rest: ['--output', 'F'],
      problems: [],
    });
    expect(editorGroups(['--editor', 'a', 'A.csv', '--output', 'F']).problems).toEqual([
      '--editor needs LABEL RESULTS_CSV ATTEMPTS_DIR, got "a A.csv"',
    ]);
    expect(editorGroups(['--output', 'F']).problems).toEqual(['--editor LABEL RESULTS_CSV ATTEMPTS_DIR is required']);
  });
});
