// Where the runners find the service: a --service-env file, whose missing entries come from the environment, or the
// environment alone (both tokens set); the URL defaults to 127.0.0.1:8768 either way.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_URL } from '../../service/api/index.ts';
import { readServiceEnv, serviceFromEnv } from '../../scripts/service-process.ts';
import { serviceAndTarget, TARGET_FLAG_DEFAULTS } from '../../scripts/target-flags.ts';
import { startService } from '../../service/server.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

const tokens = { IWIBENCH_ADMIN_TOKEN: 'admin', IWIBENCH_EDITOR_TOKEN: 'editor' };

describe('the service a runner talks to', () => {
  it("is the environment's when both tokens are set, at IWIBENCH_SERVICE_URL or 127.0.0.1:8768", () => {
    expect(DEFAULT_SERVICE_URL).toBe('http://127.0.0.1:8768');
    expect(serviceFromEnv(tokens)).toEqual({ url: DEFAULT_SERVICE_URL, adminToken: 'admin', editorToken: 'editor' });
    expect(serviceFromEnv({ ...tokens, IWIBENCH_SERVICE_URL: 'http://10.0.0.2:9000' })?.url).toBe(
      'http://10.0.0.2:9000',
    );
    expect(serviceFromEnv({ IWIBENCH_ADMIN_TOKEN: 'admin' })).toBeUndefined();
  });

  it('reads a --service-env file, completing it from the environment, and names what neither gives', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-env-'));
    const full = path.join(dir, 'full.env');
    writeFileSync(
      full,
      'IWIBENCH_SERVICE_URL=http://127.0.0.1:9999\nIWIBENCH_ADMIN_TOKEN=a\nIWIBENCH_EDITOR_TOKEN=e\n',
    );
    expect(readServiceEnv(full, { ...tokens, IWIBENCH_SERVICE_URL: 'http://elsewhere' })).toEqual({
      url: 'http://127.0.0.1:9999',
      adminToken: 'a',
      editorToken: 'e',
    });
    const partial = path.join(dir, 'partial.env');
    writeFileSync(partial, 'IWIBENCH_ADMIN_TOKEN=a\n');
    expect(readServiceEnv(partial, tokens)).toEqual({
      url: DEFAULT_SERVICE_URL,
      adminToken: 'a',
      editorToken: 'editor',
    });
    expect(() => readServiceEnv(partial, {})).toThrow(
      /partial\.env lacks IWIBENCH_EDITOR_TOKEN \(and the environment does not set them\)/,
    );
  });

  it("refuses a service whose /health names another device than the runner's (run_target must see what evaluation sees)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-env-'));
    const saved = { ...process.env };
    Object.assign(process.env, tokens);
    const modelDir = fixtureCheckpoint('tiny');
    const { app, url } = await startService({
      modelDir,
      outputDir: path.join(dir, 'service'),
      host: '127.0.0.1',
      port: 0,
    });
    try {
      const env = path.join(dir, 'service.env');
      writeFileSync(env, `IWIBENCH_SERVICE_URL=${url}\n`);
      // (A service on the runner's own device is accepted: pipeline.test.ts runs run-pilot with --service-env.)
      const flags = { ...TARGET_FLAG_DEFAULTS, 'model-dir': modelDir };
      await expect(serviceAndTarget(env, { ...flags, device: 'ort-cpu' }, dir)).rejects.toThrow(
        'the service runs its projections on --device cpu, but evaluation would use --device ort-cpu',
      );
    } finally {
      await app.close();
      process.env = saved;
    }
  });
});
