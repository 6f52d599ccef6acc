// The scoreboard's token efficiency (report.html, #token-efficiency): each editor's rows are report-token-efficiency's
// for the same attempts, counted from the traces the report reads once for the attempt pages; a trace whose editor
// tokens cannot be counted (a torn line) gives its editor a note naming the line, and the rest of the report stands.
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { num } from '../../report/html-kit.ts';
import { findAttempts, readCsvRecords, tokenEfficiency, writeReport } from '../../report/index.ts';
import type { ResultsCsvRecord } from '../../report/index.ts';
import { GRID, attemptFolderName, tempDir, writeGrid, writeTrace } from './fixtures.ts';

describe('the scoreboard’s token efficiency', () => {
  it('equals report-token-efficiency per editor, and names the torn line of a trace it cannot count', () => {
    const root = tempDir('efficiency');
    const runs = writeGrid(root);
    const dirOf = (a: (typeof GRID)[number]) =>
      path.join(a.editor === 'alpha' ? runs.alpha : runs.beta, 'attempts', attemptFolderName(a));
    GRID.forEach((a, i) =>
      writeTrace(dirOf(a), [
        { input_tokens: 1000 + 10 * i, cached_input_tokens: 100, output_tokens: 50 + i, reasoning_tokens: 5 },
        { input_tokens: 2000, cached_input_tokens: 0, output_tokens: 100, reasoning_tokens: 0 },
      ]),
    );
    const torn = path.join(dirOf(GRID.find((a) => a.editor === 'beta')!), 'trace.jsonl');
    const tornLine = readFileSync(torn, 'utf8').trimEnd().split('\n').length + 1;
    appendFileSync(torn, '{"type":"response","usage":{"input_'); // a run killed mid-write

    const out = path.join(root, 'out');
    const written = writeReport({
      runs: [runs.alpha, runs.beta],
      editors: [],
      outputDir: out,
      invocation: { command: 'report', args: { runs: [runs.alpha, runs.beta] } },
    });
    const html = readFileSync(written.html, 'utf8');
    const section = html.slice(html.indexOf('<section id="token-efficiency">'));

    // alpha: the rows report-token-efficiency computes from its own reading of the traces.
    const records = readCsvRecords(written.results_csv) as ResultsCsvRecord[];
    const { rows } = tokenEfficiency('alpha', records, findAttempts([path.join(runs.alpha, 'attempts')]).attempts);
    const aggregates = rows.filter((r) => r.scope !== 'attempt');
    expect(aggregates.length).toBeGreaterThan(1);
    for (const r of aggregates)
      expect(section).toContain(
        `<td class="num">${r.n}</td><td class="num">${num(r.editor_requests)}</td>\n<td class="num">${num(r.editor_tokens)}</td>`,
      );
    const all = aggregates.find((r) => r.scope === 'all')!;
    const alphaCount = GRID.filter((a) => a.editor === 'alpha').length;
    expect(all.editor_tokens).toBe(
      GRID.reduce((sum, a, i) => (a.editor === 'alpha' ? sum + 1000 + 10 * i + 50 + i + 2100 : sum), 0),
    );
    expect(all.n).toBe(alphaCount);

    // beta: no rows, a note naming the torn line, as report-token-efficiency would refuse it.
    expect(section).toMatch(
      new RegExp(`<li>beta: ${torn.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${tornLine} is not JSON: `),
    );
    expect(section.match(/<tr class="[^"]*"><td>beta/g)).toBeNull();
  });
});
