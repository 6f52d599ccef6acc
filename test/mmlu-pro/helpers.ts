// Shared by the MMLU-Pro tests: where the data and the repo are, scratch folders, and run settings for a fake server.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveConfig, type FlagOverrides, type MmluProConfig } from '../../mmlu-pro/config.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The shared copies of the dataset (../shared/data/mmlu-pro from the repo root); never copied into the repo. */
export const DATA_DIR = path.resolve(REPO_ROOT, '../shared/data/mmlu-pro');

/** A fresh folder under the OS temp dir, and a function that removes it. */
export function scratchDir(prefix = 'mmlu-pro-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Settings for a run against `url` writing to `outputDir`, with the shared data; `flags` as on the command line. */
export function testConfig(url: string, outputDir: string, flags: FlagOverrides = {}, file: Parameters<typeof resolveConfig>[0] = {}): MmluProConfig {
  return resolveConfig(file, { url, model: 'fake-model', data_dir: DATA_DIR, output_dir: outputDir, ...flags });
}
