// `pilot dashboard` (bull-board) on a real Redis, checked in Chromium as the report's pages are
// (test/report/browser.ts): the queue's jobs by state, a finished attempt linked to its page (rendered from its
// folder, as `report` renders it); beyond loopback, nothing without the token.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Queue } from 'bullmq';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeJsonAtomic } from '../../core/files.ts';
import { startDashboard, type Dashboard } from '../../scripts/pilot/dashboard.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';
import type { AttemptStatus } from '../../taskset/attempt.ts';
import { queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { TransientFailure } from '../../taskset/queue/failures.ts';
import { attemptJob } from '../../taskset/queue/job.ts';
import { laneName } from '../../taskset/queue/lanes.ts';
import { attemptSettings } from '../../taskset/queue/settings.ts';
import { startWorker } from '../../taskset/queue/worker.ts';
import { GRID, resultsFile, tempDir } from '../report/fixtures.ts';
import { launchChromium, openPage } from '../report/browser.ts';

let redis: RedisHandle;
let browser: Browser;
let dashboard: Dashboard;
let queue: Queue;
const out = tempDir('dashboard');
const SETTINGS = attemptSettings({ model: 'builtin:noop' }, { itemsPerKind: 1, target: { model: 't', revision: 'r' } });
const LANE = laneName(SETTINGS.arithmetic);
const [done, failed, waiting] = [3, 7, 11].map((seed) =>
  attemptJob({ family: 'alias_acquisition', seed }, 'alpha', 0, SETTINGS, 'calibration.json'),
);

beforeAll(async () => {
  redis = await startRedis();
  browser = await launchChromium();
  const connection = queueConnection({ queue: redis.url(1) });
  queue = new Queue(LANE, { connection });
  await enqueueAttempts(connection, [done!, failed!], { retries: 0, backoffMs: 10 });
  const { stop } = startWorker({
    connection,
    outputDir: out,
    concurrency: 1,
    run: async (job, dir) => {
      if (job.id === failed!.id) throw new TransientFailure('the editor API failed (rate limit)');
      writeJsonAtomic(path.join(dir, 'results.json'), resultsFile(GRID[0]!));
      writeFileSync(path.join(dir, 'trace.jsonl'), '');
      const status: AttemptStatus = {
        status: 'complete',
        id: job.id,
        family: job.family,
        seed: job.seed,
        editor: job.editor_label,
        reward: 0.5,
        stop_reason: 'final_reply',
        finished_at: new Date().toISOString(),
      };
      writeJsonAtomic(path.join(dir, 'attempt.json'), status);
      return status;
    },
  });
  while ((await queue.getCompletedCount()) + (await queue.getFailedCount()) < 2)
    await new Promise((r) => setTimeout(r, 50));
  await stop(0);
  await enqueueAttempts(connection, [waiting!], { retries: 0, backoffMs: 10 });
  dashboard = await startDashboard({ connection, outputDir: out, host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await dashboard?.close();
  await browser?.close();
  await queue?.close();
  await redis?.stop();
});

describe('pilot dashboard', () => {
  it('lists the queue’s jobs by state in Chromium, and links a finished attempt to its page', async () => {
    const { page } = await openPage(browser);
    const base = `${dashboard.url}queue/${LANE}`;
    // A job's card renders its header first and its data or error a moment later: wait for the text the card must
    // show before reading the page.
    const shown = async (status: string, cardText: string) => {
      await page.goto(`${base}?status=${status}`);
      await page.getByText(cardText).first().waitFor();
      return page.innerText('main');
    };
    const completed = await shown('completed', `/attempts/${done!.id}`);
    expect(completed).toContain(done!.id);
    expect(completed).not.toContain(failed!.id);
    expect(completed).toContain(`attempt_page:"/attempts/${done!.id}"`);
    const failures = await shown('failed', 'the editor API failed (rate limit)');
    expect(failures).toContain(failed!.id);
    expect(failures).toContain('the editor API failed (rate limit)');
    const queued = await shown('waiting', waiting!.id);
    expect(queued).toContain(waiting!.id);
    expect(queued).not.toContain(done!.id);

    // The completed job's link opens its attempt page.
    await page.goto(`${base}?status=completed`);
    const link = page.locator(`a[href="/attempts/${done!.id}"]`).first();
    await link.waitFor();
    await page.goto(new URL(`/attempts/${done!.id}`, dashboard.url).href);
    expect(await page.title()).toContain('alias_acquisition seed 3');
    const missing = await fetch(new URL(`/attempts/${waiting!.id}`, dashboard.url));
    expect(missing.status).toBe(404);
  });

  it('beyond loopback it needs a token, given once and then kept in a cookie; without one it refuses to start', async () => {
    const connection = queueConnection({ queue: redis.url(1) });
    await expect(startDashboard({ connection, outputDir: out, host: '0.0.0.0', port: 0 })).rejects.toThrow(
      'needs a token: --token-env VARIABLE',
    );
    const guarded = await startDashboard({
      connection,
      outputDir: out,
      host: '0.0.0.0',
      port: 0,
      token: 's3cret-token',
    });
    try {
      const port = new URL(guarded.url).port;
      const at = (p: string) => `http://127.0.0.1:${port}${p}`;
      expect((await fetch(at('/api/queues'))).status).toBe(401);
      expect((await fetch(at('/?token=wrong'))).status).toBe(401);
      const { page } = await openPage(browser);
      await page.goto(at('/?token=s3cret-token'));
      await page.goto(at(`/queue/${LANE}?status=completed`)); // the cookie, not the token, from here on
      await page.getByText(done!.id).first().waitFor();
    } finally {
      await guarded.close();
    }
  });
});
