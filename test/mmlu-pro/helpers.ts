// Shared by the MMLU-Pro tests: the repo root, scratch folders, a synthetic data folder written by the tests
// themselves (fixtures.ts), and run settings for a fake server.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveConfig, type FlagOverrides, type MmluProConfig } from '../../mmlu-pro/config.ts';
import { writeDataDir } from './fixtures.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A fresh folder under the OS temp dir, and a function that removes it. */
export function scratchDir(prefix = 'mmlu-pro-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * The synthetic MMLU-Pro folder: parquet test and validation splits, the five JSON-lines validations. Made once per
 * test process and left for the run's temp folder to take (test/global-setup.ts): test files share their modules
 * (vitest.config.ts), so a file's afterAll would remove it under the next file.
 */
export const DATA_DIR = writeDataDir(scratchDir('mmlu-pro-data-').dir);

/**
 * Settings for a run against `url` writing to `outputDir`, with the synthetic data; `flags` as on the command line.
 * Zero-shot, one request at a time and no extra stop unless asked: the tests' defaults, not the example config's.
 */
export function testConfig(
  url: string,
  outputDir: string,
  flags: FlagOverrides = {},
  file: Parameters<typeof resolveConfig>[0] = {},
): MmluProConfig {
  const base = { inference: { stop: [], ...file.inference }, test: { cot: false, parallel: 1, ...file.test } };
  return resolveConfig(
    { ...file, ...base },
    { url, model: 'fake-model', data_dir: DATA_DIR, output_dir: outputDir, ...flags },
  );
}
