// Headless Chromium for the report tests (Debian's chromium driven by playwright-core, stack.md "Browsers"), and the
// checks every report page must pass there. Chromium is required: without it these tests fail, they do not skip.
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
export const VIEWPORT = { width: 1280, height: 900 };

export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: the HTML report tests need Debian's chromium (apt-get update && apt-get install -y chromium)`,
    );
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A page in a fresh, throw-away profile at 1,280 px, recording every request it makes. */
export async function openPage(browser: Browser): Promise<{ page: Page; requests: string[] }> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  const page = await context.newPage();
  const requests: string[] = [];
  page.on('request', (request) => requests.push(request.url()));
  return { page, requests };
}

/** Elements whose box reaches past the viewport's right edge (closed <details> have no box). */
export async function widerThanViewport(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > width + 0.5)
      .map(
        (e) =>
          `${e.tagName.toLowerCase()}.${e.getAttribute('class') ?? ''} right ${Math.round(e.getBoundingClientRect().right)}`,
      );
    if (document.documentElement.scrollWidth > width)
      wide.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
    return wide.slice(0, 20);
  });
}

/** A folder under the system temp folder for screenshots, printed so that a person can look at them. */
export function screenshotDir(name: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), `iwibench-report-screenshots-${name}-`));
  console.log(`report screenshots (${name}): ${dir}`);
  return dir;
}
