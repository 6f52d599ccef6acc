// The scoreboard (report.html) and the attempt pages of the 2 editors × 3 families × 2 seeds grid, each attempt with
// a chat-shaped trace, opened from disk in headless Chromium: the plots render at the size of their values, every
// plotted and tabled number equals the CSV's, every row's link opens its attempt page, whatever comes from a run is
// shown as text (never run as markup), nothing is wider than a 1,280 px window, and no page loads anything.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsvRecords } from '../../report/csv.ts';
import { TOY_MODEL_ID } from '../../report/html-kit.ts';
import { writeReport } from '../../report/index.ts';
import { TOY_CONFIG } from '../../toy/target.ts';
import { FAMILY_IDS } from '../../taskset/types.ts';
import { launchChromium, openPage, screenshotDir, widerThanViewport } from './browser.ts';
import { GRID, OBJECTIVE, SYSTEM_PROMPT, attemptFolderName, tempDir, writeGrid, writeTrace } from './fixtures.ts';

const HOSTILE = '<script>window.hacked = 1</script><img src=x onerror="window.hacked = 2">';

describe('report.html and the attempt pages in headless Chromium', () => {
  let browser: Browser;
  let page: Page;
  let requests: string[];
  let out: string;
  let pageUrl: string;

  beforeAll(async () => {
    const root = tempDir('html');
    const runs = writeGrid(root);
    GRID.forEach((a, i) => {
      const dir = path.join(a.editor === 'alpha' ? runs.alpha : runs.beta, 'attempts', attemptFolderName(a));
      writeTrace(
        dir,
        [
          { input_tokens: 1000 * (i + 1), cached_input_tokens: 100, output_tokens: 50 * (i + 1), reasoning_tokens: 10 },
          { input_tokens: 2000, cached_input_tokens: 0, output_tokens: 100, reasoning_tokens: 0 },
        ],
        (turn) =>
          turn === 0
            ? JSON.stringify({
                result: { values: Array.from({ length: 300 }, (_, k) => k / 7) },
                budget: { tool_calls: 127, forward_tokens: 261000 },
              })
            : JSON.stringify({ error: { code: 'SLICE_INVALID', message: HOSTILE }, budget: { tool_calls: 126 } }),
      );
      if (i === 0) {
        // Untrusted text from a run: an item's prompt and output.
        const file = path.join(dir, 'results.json');
        const results = JSON.parse(readFileSync(file, 'utf8'));
        results.items[0].messages[0].content = HOSTILE;
        results.items[0].edited.output = HOSTILE;
        writeFileSync(file, JSON.stringify(results));
      }
    });
    out = path.join(root, 'out');
    writeReport({
      runs: [runs.alpha, runs.beta],
      editors: [],
      outputDir: out,
      invocation: { command: 'report', args: { runs: [runs.alpha, runs.beta], families: FAMILY_IDS.join(',') } },
    });
    browser = await launchChromium();
    ({ page, requests } = await openPage(browser));
    pageUrl = pathToFileURL(path.join(out, 'report.html')).href;
    await page.goto(pageUrl, { waitUntil: 'load' });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('makes no request but the page itself, and holds no script or external resource', () => {
    expect(requests).toEqual([pageUrl]);
    const html = readFileSync(path.join(out, 'report.html'), 'utf8');
    expect(html).not.toMatch(/<script|<link|<img|\bsrc=|@import|url\(/i);
    // The only links are to the attempt pages next to it.
    for (const href of html.matchAll(/href="([^"]*)"/g)) expect(href[1]).toMatch(/^attempts\/[^/]+\.html$/);
  });

  it('draws three bar charts per target, every bar labelled with its value and n', async () => {
    const charts = await page.$$eval('svg.chart', (svgs) =>
      svgs.map((s) => ({
        metric: s.getAttribute('data-metric'),
        width: s.getBoundingClientRect().width,
        height: s.getBoundingClientRect().height,
      })),
    );
    expect(charts.map((c) => c.metric)).toEqual(['mean_reward', 'mean_gain', 'mean_retention']);
    for (const c of charts) {
      expect(c.width).toBeGreaterThan(100);
      expect(c.height).toBeGreaterThan(100);
    }
    const bars = await page.$$eval('svg.chart rect.bar', (rects) =>
      rects.map((r) => ({ value: Number(r.getAttribute('data-value')), n: r.getAttribute('data-n') })),
    );
    const labels = await page.$$eval('svg.chart text.value-label', (texts) => texts.map((t) => t.textContent));
    expect(labels).toEqual(bars.map((b) => `${b.value.toFixed(2)} · n=${b.n}`));
  });

  it('plots each summary value at its height, equal to summary.csv, with whiskers where n > 1', async () => {
    const summary = readCsvRecords(path.join(out, 'summary.csv')).filter((r) => r.family !== 'all');
    const bars = await page.$$eval('svg.chart rect.bar', (rects) =>
      rects.map((r) => {
        const area = r.closest('svg')!.querySelector('rect.plot-area')!;
        const data = (name: string) => r.getAttribute(`data-${name}`)!;
        return {
          metric: data('metric'),
          model: data('model-id'),
          revision: data('revision'),
          editor: data('editor'),
          family: data('family'),
          value: data('value'),
          height: r.getBoundingClientRect().height / area.getBoundingClientRect().height, // the bar's share of the 0–1 axis
        };
      }),
    );
    expect(bars).toHaveLength(summary.length * 3); // 2 editors × 3 families × 3 metrics
    for (const bar of bars) {
      const row = summary.find(
        (r) =>
          r.model_id === bar.model && r.revision === bar.revision && r.editor === bar.editor && r.family === bar.family,
      );
      expect(row, JSON.stringify(bar)).toBeDefined();
      expect(bar.value).toBe(row![bar.metric]);
      expect(bar.height).toBeCloseTo(Number(bar.value), 3);
    }
    const whiskers = await page.$$eval('line.ci', (lines) =>
      lines.map((l) => ({
        editor: l.getAttribute('data-editor'),
        family: l.getAttribute('data-family'),
        low: l.getAttribute('data-low'),
        high: l.getAttribute('data-high'),
      })),
    );
    expect(whiskers).toHaveLength(summary.filter((r) => Number(r.n) > 1).length); // every group of the grid has n = 2
    for (const w of whiskers) {
      const row = summary.find((r) => r.editor === w.editor && r.family === w.family)!;
      expect([w.low, w.high]).toEqual([row.reward_ci95_low, row.reward_ci95_high]);
    }
  });

  it('scatters reward against forward tokens and editor tokens, one linked point per attempt', async () => {
    const results = readCsvRecords(path.join(out, 'results.csv'));
    for (const resource of ['forward_tokens', 'editor_tokens']) {
      const points = await page.$$eval(`figure.scatter[data-resource="${resource}"] circle.point`, (cs) =>
        cs.map((c) => ({
          attempt: c.getAttribute('data-attempt'),
          reward: c.getAttribute('data-reward'),
          resource: Number(c.getAttribute('data-resource')),
          href: c.closest('a')?.getAttribute('href'),
        })),
      );
      expect(points).toHaveLength(results.length);
      for (const p of points) {
        const row = results.find((r) => r.attempt === p.attempt)!;
        expect(p.reward).toBe(row.reward);
        if (resource === 'forward_tokens') expect(p.resource).toBe(Number(row.forward_tokens));
        expect(p.href).toMatch(/^attempts\/.+\.html$/);
      }
    }
    // Editor tokens are input + output of the trace's responses (writeTrace above).
    const first = await page.$eval(
      'figure.scatter[data-resource="editor_tokens"] circle.point',
      (c) => [c.getAttribute('data-attempt'), Number(c.getAttribute('data-resource'))] as const,
    );
    const i = GRID.findIndex((a) => attemptFolderName(a) === first[0]);
    expect(first[1]).toBe(1000 * (i + 1) + 50 * (i + 1) + 2000 + 100);
  });

  it('tables every summary and attempt row with the CSV values, key columns first', async () => {
    for (const [table, file] of [
      ['summary', 'summary.csv'],
      ['attempts', 'results.csv'],
    ] as const) {
      const csv = readCsvRecords(path.join(out, file));
      const rows = await page.$$eval(`table.${table} tbody tr`, (trs) =>
        trs.map((tr) =>
          Object.fromEntries(
            [...tr.querySelectorAll('td')].map((td) => [
              td.getAttribute('data-column'),
              td.getAttribute('data-value') ?? td.getAttribute('data-text'),
            ]),
          ),
        ),
      );
      expect(rows).toHaveLength(csv.length);
      rows.forEach((row, i) => {
        for (const [column, value] of Object.entries(row))
          expect(value, `${table} row ${i} ${column}`).toBe(csv[i]![column!]);
      });
      if (table === 'attempts')
        expect(Object.keys(rows[0]!).slice(0, 6)).toEqual(['attempt', 'editor', 'family', 'seed', 'reward', 'gain']);
    }
  });

  it('states versions, generation time, definitions and the arguments as a table', async () => {
    const meta = await page.$eval('dl.meta', (dl) => dl.textContent ?? '');
    expect(meta).toMatch(/package 0\.1\.0, families 0\.2\.2, google\/gemma-3-1b-it @ dcc83ea8/);
    expect(meta).toMatch(/Generated\s*\d{4}-\d\d-\d\dT/);
    const args = await page.$$eval('details.args table.args tr', (trs) =>
      trs.map((tr) => [tr.querySelector('th')!.textContent, tr.querySelector('td')!.textContent]),
    );
    expect(args.map(([k]) => k)).toEqual(['runs', 'families']);
    expect(args[1]![1]).toBe(FAMILY_IDS.join(','));
    const definitions = await page.$$eval('dl.definitions dt', (dts) => dts.map((d) => d.textContent));
    expect(definitions).toEqual(['gain', 'retention', 'reward']);
    expect(await page.$('.caveat')).toBeNull(); // not the toy target
    expect(TOY_MODEL_ID).toBe(TOY_CONFIG._name_or_path);
  });

  it('links every attempt row to its page, and each page back to the scoreboard', async () => {
    const links = await page.$$eval('table.attempts a.attempt-link', (as) =>
      as.map((a) => ({ text: a.textContent, href: (a as HTMLAnchorElement).href })),
    );
    expect(links).toHaveLength(GRID.length);
    const { page: attemptPage, requests: attemptRequests } = await openPage(browser);
    for (const link of links) {
      await attemptPage.goto(link.href, { waitUntil: 'load' });
      expect(await attemptPage.$eval('h1', (h) => h.textContent)).toContain(link.text!);
      const back = await attemptPage.$eval('a[href="../report.html"]', (a) => (a as HTMLAnchorElement).href);
      expect(back).toBe(pageUrl);
    }
    expect(attemptRequests).toEqual(links.map((l) => l.href)); // each page loads nothing but itself
  });

  it('shows the transcript of a chat editor: messages, replies with usage, tool calls with results and budget', async () => {
    const { page: p } = await openPage(browser);
    await p.goto(pathToFileURL(path.join(out, 'attempts', `${attemptFolderName(GRID[1]!)}.html`)).href);
    expect(await p.$eval('dd.objective', (d) => d.textContent)).toBe(OBJECTIVE);
    const messages = await p.$$eval('li.request .msg', (ms) => ms.map((m) => m.textContent));
    expect(messages).toEqual([`system${SYSTEM_PROMPT}`, `userObjective: ${OBJECTIVE}`]); // the history is not repeated
    const replies = await p.$$eval('li.response', (rs) => rs.map((r) => r.textContent ?? ''));
    expect(replies).toHaveLength(2);
    expect(replies[0]).toMatch(/input 2,000 \(cached 100\), output 100 \(reasoning 10\) tokens · 1 tool call/);
    expect(replies[0]).toContain('Reading the norm, step 0.');
    const tools = await p.$$eval('li.tool', (ts) =>
      ts.map((t) => ({ ok: t.getAttribute('data-ok'), text: t.textContent ?? '' })),
    );
    expect(tools).toHaveLength(2);
    expect(tools[0]!.text).toMatch(/300 numbers: min 0, max 42\.71/); // a long array summarised, not listed
    expect(tools[0]!.text).toMatch(/tool calls\s*127/);
    expect(tools[1]).toMatchObject({ ok: 'false' });
    expect(tools[1]!.text).toContain(HOSTILE); // shown as text
    expect(await p.$eval('#resources', (r) => r.textContent)).toMatch(
      /Editor tokens\s*4,200 = input 4,000 \(cached 100\) \+ output 200 \(reasoning 10\), 2 requests/,
    );
  });

  it('shows text from a run as text: no markup of it runs', async () => {
    const { page: p } = await openPage(browser);
    await p.goto(pathToFileURL(path.join(out, 'attempts', `${attemptFolderName(GRID[0]!)}.html`)).href);
    expect(await p.evaluate(() => (window as unknown as { hacked?: number }).hacked)).toBeUndefined();
    expect(await p.$$('body script, body img')).toHaveLength(0);
    const row = await p.$eval('tr.item[data-item="target-00"]', (tr) => tr.textContent ?? '');
    expect(row).toContain(HOSTILE);
  });

  it('fits a 1,280 px window, and leaves screenshots to look at', async () => {
    expect(await widerThanViewport(page)).toEqual([]);
    const { page: p } = await openPage(browser);
    await p.goto(pathToFileURL(path.join(out, 'attempts', `${attemptFolderName(GRID[1]!)}.html`)).href);
    expect(await widerThanViewport(p)).toEqual([]);
    const shots = screenshotDir('grid');
    await page.screenshot({ path: path.join(shots, 'scoreboard.png'), fullPage: true });
    await p.screenshot({ path: path.join(shots, 'attempt.png'), fullPage: true });
  });
});
