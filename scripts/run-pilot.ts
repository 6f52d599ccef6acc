// npx iwibench run-pilot CALIBRATION --service-env F --model-dir DIR --output-dir D [--workers 2] [--editor-model M]
//                        [--editor-base-url U] [--api chat|responses] [--reasoning-effort E] [--attempts 1]
// Every selected episode of CALIBRATION (from `calibrate`), attempted by one editor; resumable (rerun the same
// command: completed attempts are kept, interrupted ones rerun). Without --service-env a service is started here.
import { mkdirSync, readFileSync } from 'node:fs';
import type { Calibration } from '../taskset/calibration.ts';
import { runPilot } from '../taskset/pilot.ts';
import { parseFlags } from './args.ts';
import { EDITOR_FLAG_DEFAULTS, editorFromFlags } from './editor-flags.ts';
import { TARGET_FLAG_DEFAULTS, openTarget, serviceFor } from './target-flags.ts';

const defaults = {
  'service-env': undefined as string | undefined,
  ...TARGET_FLAG_DEFAULTS,
  'output-dir': undefined as string | undefined,
  workers: 1,
  attempts: 1,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
};

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseFlags(argv, defaults, { positionals: true, required: ['output-dir'] });
  if (positionals.length !== 1) throw new Error('usage: npx iwibench run-pilot CALIBRATION --output-dir D [flags]');
  const calibration = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Calibration;
  if (!Array.isArray(calibration.episodes)) throw new Error(`${positionals[0]} is not a calibration file (no "episodes")`);
  const target = await openTarget(flags);
  const outputDir = flags['output-dir']!;
  mkdirSync(outputDir, { recursive: true });
  const { config, label } = editorFromFlags(flags);
  const { service, stop } = await serviceFor(flags['service-env'], flags, outputDir, target);
  const started = Date.now();
  const summary = await runPilot({
    episodes: calibration.episodes,
    service,
    location: target.location,
    tokenizer: target.tokenizer,
    editor: config,
    editorLabel: label,
    outputDir,
    workers: flags.workers,
    attempts: flags.attempts,
    itemsPerKind: flags['items-per-kind'] || undefined,
    args: { command: 'run-pilot', calibration: positionals[0], ...flags },
    onProgress: ({ done, total, skipped, attempt, reward, error }) => {
      const eta = done > skipped ? ((Date.now() - started) / 1000 / (done - skipped)) * (total - done) : NaN;
      process.stderr.write(`pilot ${done}/${total} (${skipped} already done) ${attempt}: ${error ? `FAILED ${error}` : `reward ${reward?.toFixed(3)}`}${Number.isFinite(eta) ? `, ETA ${eta.toFixed(0)} s` : ''}\n`);
    },
  }).finally(stop);
  const failed = summary.attempts.filter((a) => a.status === 'failed');
  process.stdout.write(JSON.stringify({ output_dir: outputDir, attempts: summary.attempts.length, failed: failed.length }) + '\n');
  if (failed.length > 0) process.exitCode = 1;
}
