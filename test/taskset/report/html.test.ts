// report.html opened from disk in headless Chromium (Debian's chromium driven by playwright-core, stack.md
// "Browsers"): the plots render at the size of their values, every plotted and tabled number equals the CSV's, and
// the page loads nothing. Chromium is required: without it this test fails, it does not skip.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCsvRecords } from '../../../taskset/report/csv.ts';
import { FAMILY_IDS } from '../../../taskset/types.ts';
import { writeReport } from '../../../taskset/report/index.ts';
import { tempDir, writeGrid } from './fixtures.ts';

const CHROMIUM = '/usr/bin/chromium';

describe('report.html in headless Chromium', () => {
  let browser: Browser;
  let page: Page;
  let out: string;
  const requests: string[] = [];
  let pageUrl: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: the HTML report test needs Debian's chromium (apt-get update && apt-get install -y chromium)`);
    const root = tempDir('html');
    const runs = writeGrid(root);
    out = path.join(root, 'out');
    writeReport({ runs: [runs.alpha, runs.beta], editors: [], outputDir: out, invocation: { command: 'report', args: { runs: [runs.alpha, runs.beta], families: FAMILY_IDS.join(',') } } });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext(); // a fresh, throw-away profile
    page = await context.newPage();
    page.on('request', (request) => requests.push(request.url()));
    pageUrl = pathToFileURL(path.join(out, 'report.html')).href;
    await page.goto(pageUrl, { waitUntil: 'load' });
  });

  afterAll(async () => {
    await browser?.close();
  });

  it('makes no request but the page itself', () => {
    expect(requests).toEqual([pageUrl]);
    const html = readFileSync(path.join(out, 'report.html'), 'utf8');
    expect(html).not.toMatch(/<script|<link|<img|\bsrc=|\bhref=|@import|url\(/i);
  });

  it('draws three charts per target with a visible size', async () => {
    const charts = await page.$$eval('svg.chart', (svgs) => svgs.map((s) => ({ metric: s.getAttribute('data-metric'), width: s.getBoundingClientRect().width, height: s.getBoundingClientRect().height })));
    expect(charts.map((c) => c.metric)).toEqual(['mean_reward', 'mean_gain', 'mean_retention']);
    for (const c of charts) {
      expect(c.width).toBeGreaterThan(100);
      expect(c.height).toBeGreaterThan(100);
    }
  });

  it('plots each summary value at its height, equal to summary.csv', async () => {
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
      const row = summary.find((r) => r.model_id === bar.model && r.revision === bar.revision && r.editor === bar.editor && r.family === bar.family);
      expect(row, JSON.stringify(bar)).toBeDefined();
      expect(bar.value).toBe(row![bar.metric]);
      expect(bar.height).toBeCloseTo(Number(bar.value), 3);
    }
    const whiskers = await page.$$eval('line.ci', (lines) => lines.map((l) => ({ editor: l.getAttribute('data-editor'), family: l.getAttribute('data-family'), low: l.getAttribute('data-low'), high: l.getAttribute('data-high') })));
    expect(whiskers).toHaveLength(summary.length);
    for (const w of whiskers) {
      const row = summary.find((r) => r.editor === w.editor && r.family === w.family)!;
      expect([w.low, w.high]).toEqual([row.reward_ci95_low, row.reward_ci95_high]);
    }
  });

  it('tables every summary and attempt row with the CSV values', async () => {
    for (const [table, file] of [['summary', 'summary.csv'], ['attempts', 'results.csv']] as const) {
      const csv = readCsvRecords(path.join(out, file));
      const rows = await page.$$eval(`table.${table} tbody tr`, (trs) =>
        trs.map((tr) => Object.fromEntries([...tr.querySelectorAll('td')].map((td) => [td.getAttribute('data-column'), td.getAttribute('data-value') ?? td.textContent]))),
      );
      expect(rows).toEqual(csv);
    }
  });

  it('states the versions, the arguments and the generation time', async () => {
    const meta = await page.$eval('dl.meta', (dl) => dl.textContent ?? '');
    expect(meta).toMatch(/package 0\.1\.0, families 0\.2\.2, google\/gemma-3-1b-it @ dcc83ea8/);
    expect(meta).toMatch(/"runs":\[/);
    expect(meta).toMatch(/Generated\s*\d{4}-\d\d-\d\dT/);
  });

  it('wraps a long line of arguments inside the page', async () => {
    const boxes = await page.$$eval('dl.meta dd', (dds) => dds.map((dd) => ({ right: dd.getBoundingClientRect().right, overflow: dd.scrollWidth - dd.clientWidth })));
    const width = await page.evaluate(() => window.innerWidth);
    for (const box of boxes) {
      expect(box.right).toBeLessThanOrEqual(width);
      expect(box.overflow).toBe(0);
    }
  });
});
