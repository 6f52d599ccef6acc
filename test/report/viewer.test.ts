// A real run, end to end through the CLI on the committed toy target: `demo` (two families, builtin:rank-one, fresh
// evaluation processes), `replay-patch` of one attempt with a new control seed, then `report` over both. The attempt
// pages are held to the run's own files in headless Chromium: the objective of the brief, the tool calls of the
// trace with their results, the ops of patch.json, every graded item with the verdicts of results.json; the replay
// appears next to its attempt; nothing is wider than 1,280 px; screenshots are left for a person to look at.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResultsFile } from '../../taskset/evaluation.ts';
import { num } from '../../report/html-kit.ts';
import { startCliHost, type CliHost } from '../cli-host.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { launchChromium, openPage, screenshotDir, widerThanViewport } from './browser.ts';
import { tempDir } from './fixtures.ts';

let host: CliHost;
/** The run's command lines in one command host (test/cli-host.ts): their modules load once. */
const cli = (args: string[]) => host.ok(args);
const FAMILIES = ['local_factual_update', 'alias_acquisition'];

describe('report over a real toy-target run (demo, replay-patch, report)', () => {
  let root: string;
  let out: string;
  let attempts: { id: string; dir: string; results: ResultsFile }[];
  let browser: Browser;
  let board: Page;
  let requests: string[];

  beforeAll(async () => {
    root = tempDir('viewer');
    host = await startCliHost(REPO_ROOT);
    const run = path.join(root, 'run');
    await cli([
      'demo',
      '--output-dir',
      run,
      '--families',
      FAMILIES.join(','),
      '--calibration-seeds',
      '0',
      '--seed',
      '0',
      '--items-per-kind',
      '6',
    ]);
    attempts = readdirSync(path.join(run, 'attempts'))
      .sort()
      .map((id) => ({
        id,
        dir: path.join(run, 'attempts', id),
        results: JSON.parse(readFileSync(path.join(run, 'attempts', id, 'results.json'), 'utf8')) as ResultsFile,
      }));
    const replayed = attempts.find((a) => a.results.episode.family === 'local_factual_update')!;
    await cli([
      'replay-patch',
      path.join(replayed.dir, 'results.json'),
      '--control-seed',
      '5',
      '--model-dir',
      'toy/target',
      '--items-per-kind',
      '6',
      '--output-dir',
      path.join(root, 'replay'),
    ]);
    out = path.join(root, 'report');
    await cli(['report', path.join(run, 'attempts'), path.join(root, 'replay'), '--output-dir', out]);
    browser = await launchChromium();
    ({ page: board, requests } = await openPage(browser));
    await board.goto(pathToFileURL(path.join(out, 'report.html')).href);
  }, 240_000);

  afterAll(async () => {
    host?.stop();
    await browser?.close();
  });

  const attemptPage = async (id: string): Promise<Page> => {
    const href = await board.$eval(
      `table.attempts a.attempt-link[href*="${id}"]`,
      (a) => (a as HTMLAnchorElement).href,
    );
    const { page } = await openPage(browser);
    await page.goto(href);
    return page;
  };

  it('lists both attempts (not the replay) and says the target is the toy', async () => {
    const rows = await board.$$eval('table.attempts tbody tr td[data-column=attempt]', (tds) =>
      tds.map((td) => td.getAttribute('data-text')),
    );
    expect(rows).toEqual(attempts.map((a) => a.id));
    expect(await board.$eval('.caveat', (c) => c.textContent)).toMatch(/toy/);
    expect(requests).toHaveLength(1);
  });

  it('shows the replay with new and repeated controls side by side, linked to its attempt', async () => {
    const replay = JSON.parse(readFileSync(path.join(root, 'replay', 'replay.json'), 'utf8'));
    const row = await board.$eval('tr.replay', (tr) => ({
      text: tr.textContent ?? '',
      href: tr.querySelector('a')?.getAttribute('href'),
    }));
    expect(row.href).toBe('attempts/local_factual_update-s0-builtin_rank-one-a0.html');
    expect(row.text).toContain(`0 → 5`);
    expect(row.text).toContain(`(${replay.new_controls.retained}/${replay.new_controls.base_correct})`);
    expect(row.text).toContain(`(${replay.repeated_controls.retained}/${replay.repeated_controls.base_correct})`);
    const page = await attemptPage('local_factual_update-s0-builtin_rank-one-a0');
    expect(await page.$eval('p.replay-line', (p) => p.textContent)).toMatch(
      new RegExp(`control seed 5 \\(this attempt: 0\\): reward ${num(replay.score.reward)}`),
    );
    await page.close();
  });

  it('each attempt page shows the objective, the tool calls with results, the ops and every graded item as results.json has it', async () => {
    for (const a of attempts) {
      const page = await attemptPage(a.id);
      const trace = readFileSync(path.join(a.dir, 'trace.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(await page.$eval('dd.objective', (d) => d.textContent)).toBe(trace[0].brief.objective.text);
      expect(await page.$$eval('table.practice tbody tr', (trs) => trs.length)).toBe(trace[0].brief.practice.length);

      const tools = trace.filter((l) => l.type === 'tool');
      const shown = await page.$$eval('li.tool', (lis) =>
        lis.map((li) => ({
          name: li.getAttribute('data-tool'),
          result: li.querySelector('.result')?.textContent ?? '',
        })),
      );
      expect(shown.map((t) => t.name)).toEqual(tools.map((t) => t.name));
      const write = shown.findIndex((t) => t.name === 'write_weights');
      expect(write).toBeGreaterThanOrEqual(0);
      expect(shown[write]!.result).toContain(String(JSON.parse(tools[write].output).result.opCount));

      const patch = JSON.parse(readFileSync(path.join(a.dir, 'patch', 'patch.json'), 'utf8'));
      const ops = await page.$$eval('tr.op', (trs) =>
        trs.map((tr) => ({
          op: tr.getAttribute('data-op'),
          tensor: tr.getAttribute('data-tensor'),
          text: tr.textContent ?? '',
        })),
      );
      expect(ops.map(({ op, tensor }) => ({ op, tensor }))).toEqual(
        patch.ops.map((o: { op: string; tensor: string }) => ({ op: o.op, tensor: o.tensor })),
      );
      if (patch.ops[0]?.op === 'low_rank_add') expect(ops[0]!.text).toMatch(/u \[128 × \d+\] = [\d,]+ numbers/);
      expect(await page.$eval('code.patch-id', (c) => c.textContent)).toBe(a.results.patch!.sha256);
      for (const [tensor, stats] of Object.entries(patch.stats.tensors as Record<string, { changed: number }>)) {
        const row = await page.$eval(`table.tensors tr[data-tensor="${tensor}"]`, (tr) => ({
          text: tr.textContent ?? '',
          strips: tr.querySelectorAll('svg.heat').length,
        }));
        expect(row.text).toContain(stats.changed.toLocaleString('en'));
        expect(row.strips).toBe(2); // rows and columns of a matrix
      }

      const items = await page.$$eval('tr.item', (trs) =>
        trs.map((tr) => ({
          id: tr.dataset.item,
          kind: tr.dataset.kind,
          base: tr.dataset.basePassed === 'true',
          edited: tr.dataset.editedPassed === 'true',
          text: tr.textContent ?? '',
        })),
      );
      expect(items.map(({ id, kind, base, edited }) => ({ id, kind, base, edited }))).toEqual(
        [...a.results.items]
          .sort((x, y) => kindOrder(x.kind) - kindOrder(y.kind))
          .map((i) => ({ id: i.id, kind: i.kind, base: i.base.passed, edited: i.edited.passed })),
      );
      for (const item of a.results.items) {
        const text = items.find((i) => i.id === item.id)!.text;
        expect(text).toContain(item.edited.verdict.detail);
        expect(text).toContain(item.base.verdict.detail);
      }
      expect(await page.$eval('b.stop-reason', (b) => b.textContent)).toBe(
        JSON.parse(readFileSync(path.join(a.dir, 'attempt.json'), 'utf8')).stop_reason,
      );
      expect(await widerThanViewport(page)).toEqual([]);
      await page.close();
    }
  });

  it('fits a 1,280 px window, and leaves screenshots of the scoreboard and an attempt page', async () => {
    expect(await widerThanViewport(board)).toEqual([]);
    const shots = screenshotDir('toy-run');
    await board.screenshot({ path: path.join(shots, 'scoreboard.png'), fullPage: true });
    const page = await attemptPage('local_factual_update-s0-builtin_rank-one-a0');
    await page.screenshot({ path: path.join(shots, 'attempt-top.png') });
    for (const section of ['patch', 'items', 'transcript']) {
      await page.$eval(`#${section}`, (s) => s.scrollIntoView());
      await page.screenshot({ path: path.join(shots, `attempt-${section}.png`) });
    }
  });
});

const kindOrder = (kind: string) => ['target', 'preservation', 'override', 'control'].indexOf(kind);
