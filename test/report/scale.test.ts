// A report of 300 attempts, each with a trace, and a few with traces far larger than a page may be: every page stays
// under 2 MB (a browser opens it at once), the large transcripts say on the page that they were shortened, and the page sizes and the
// time Chromium takes to open the scoreboard and an attempt page are printed (a measurement for the README, not an
// assertion: the machine is shared and noisy).
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeReport } from '../../report/index.ts';
import { PAGE_LIMIT } from '../../report/attempt-page.ts';
import { FAMILY_IDS } from '../../taskset/types.ts';
import { launchChromium, openPage } from './browser.ts';
import {
  GRID,
  attemptFolderName,
  tempDir,
  writeRuns,
  writeToolTrace,
  writeTrace,
  type FixtureAttempt,
} from './fixtures.ts';

const ATTEMPTS = 300;
const LARGE = [150]; // attempts whose traces hold far more than a page may show

describe('a report of 300 attempts', () => {
  let root: string;
  let out: string;
  let attempts: FixtureAttempt[];
  let browser: Browser;

  beforeAll(async () => {
    root = tempDir('scale');
    const runs = path.join(root, 'runs');
    // Ten families × 3 editors × 10 seeds, scored like the grid's attempts.
    attempts = Array.from({ length: ATTEMPTS }, (_, i) => ({
      ...GRID[i % GRID.length]!,
      editor: ['alpha', 'beta', 'gamma'][i % 3]!,
      family: FAMILY_IDS[i % FAMILY_IDS.length]!,
      seed: Math.floor(i / 30),
    }));
    const dirs = writeRuns(runs, attempts);
    const numbers = (n: number, k: number) => Array.from({ length: n }, (_, j) => Math.sin(j + k));
    dirs.forEach((dir, i) => {
      if (LARGE.includes(i)) {
        // 128 calls, each with 24 sequences of 40 positions of long strings and numbers: ~60 MB of trace per attempt.
        const position = (j: number) => ({
          token: `▁token-${j}-${'x'.repeat(200)}`,
          top: numbers(32, j),
          logit: j / 3,
        });
        writeToolTrace(
          dir,
          128,
          (k) =>
            JSON.stringify({ sequences: numbers(24, k).map((x) => ({ text: `prompt ${x} ${'y'.repeat(3000)}` })) }),
          (k) =>
            JSON.stringify({
              result: {
                sequences: Array.from({ length: 24 }, (_, s) => ({
                  positions: Array.from({ length: 40 }, (_, j) => position(j + s + k)),
                })),
              },
              budget: { tool_calls: 128 - k },
            }),
        );
      } else
        writeTrace(
          dir,
          Array.from({ length: 6 }, (_, k) => ({
            input_tokens: 1000 * (k + 1),
            cached_input_tokens: 0,
            output_tokens: 200,
            reasoning_tokens: 0,
          })),
          (k) => JSON.stringify({ result: { values: numbers(256, k) }, budget: { tool_calls: 100 - k } }),
        );
    });
    out = path.join(root, 'out');
    const started = performance.now();
    writeReport({
      runs: [runs],
      editors: [],
      outputDir: out,
      invocation: { command: 'report', args: { runs: [runs] } },
    });
    console.log(`report of ${ATTEMPTS} attempts written in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    browser = await launchChromium();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    rmSync(root, { recursive: true, force: true }); // ~70 MB of traces
  });

  it('writes one page per attempt, each under 2 MB, and says where it shortened a transcript', () => {
    const pages = readdirSync(path.join(out, 'attempts')).sort();
    expect(pages).toHaveLength(ATTEMPTS);
    const sizes = pages.map((p) => statSync(path.join(out, 'attempts', p)).size);
    for (const [i, size] of sizes.entries()) expect(size, pages[i]).toBeLessThan(PAGE_LIMIT);
    const board = statSync(path.join(out, 'report.html')).size;
    expect(board).toBeLessThan(PAGE_LIMIT);
    for (const i of LARGE) {
      const html = readFileSync(path.join(out, 'attempts', `${attemptFolderName(attempts[i]!)}.html`), 'utf8');
      expect(html).toContain('class="warn folded-note"');
      expect(html.match(/<li class="ev tool/g)).toHaveLength(128); // every call is still listed
    }
    console.log(
      `page sizes: scoreboard ${(board / 1e6).toFixed(2)} MB; attempt pages ${(Math.min(...sizes) / 1e6).toFixed(2)}–${(Math.max(...sizes) / 1e6).toFixed(2)} MB`,
    );
  });

  it('opens in Chromium (time printed, not asserted)', async () => {
    const { page } = await openPage(browser);
    for (const [name, file] of [
      ['scoreboard', 'report.html'],
      ['largest attempt page', `attempts/${attemptFolderName(attempts[LARGE[0]!]!)}.html`],
    ] as const) {
      const started = performance.now();
      await page.goto(pathToFileURL(path.join(out, file)).href, { waitUntil: 'load' });
      const ms = performance.now() - started;
      expect(await page.$$('body > *')).not.toHaveLength(0);
      console.log(`Chromium opened the ${name} of a ${ATTEMPTS}-attempt report in ${ms.toFixed(0)} ms`);
    }
    expect(await page.$$eval('a.attempt-link', (as) => as.length)).toBe(0); // the attempt page links only back
  });
});
