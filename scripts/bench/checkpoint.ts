// The checkpoint a benchmark runs on: --model-dir, or a preset's random-weight checkpoint made once in the temp folder.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Preset, PRESETS } from '../../engine/index.ts';

const CLI = fileURLToPath(new URL('../../bin/iwibench.js', import.meta.url));

/** The folder of --model-dir, or of `preset`'s checkpoint (seed 0), made now if it is not there yet. */
export function benchCheckpointDir(preset: string, modelDir: string | undefined): string {
  if (!PRESETS.includes(preset as Preset)) throw new Error(`--preset must be one of ${PRESETS.join(', ')}`);
  const dir = modelDir ?? path.join(os.tmpdir(), `iwibench-bench-${preset}`);
  if (!modelDir && !existsSync(dir)) {
    process.stderr.write(`making ${preset} checkpoint in ${dir} …\n`);
    // In a process of its own: making it holds the whole checkpoint in memory, which would be this process's peak RSS.
    execFileSync(process.execPath, [CLI, 'make-tiny-checkpoint', '--out', dir, '--preset', preset, '--seed', '0'], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  }
  return dir;
}
