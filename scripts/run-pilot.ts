// npx iwibench run-pilot runs/calibration.json --service-env runs/service.env --output-dir runs/pilot [--workers 2]
//                        [--editor-model M] [--editor-base-url U] [--api chat|responses] [--reasoning-effort E] [--attempts 1]
// Every selected episode of CALIBRATION (from `calibrate`), attempted by one editor; resumable (rerun the same
// command: completed attempts are kept, interrupted ones rerun). The service: --service-env, else the environment's,
// else one started here; the checkpoint: the target flags, else the one the service serves (from the HF cache).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { readCalibration, resumeLine, runPilot, Evaluator, Taskset } from '../taskset/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { showEvaluationProgress } from './evaluation-progress.ts';
import { attemptsLine, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';
import { EDITOR_FLAG_CHOICES, EDITOR_FLAG_DEFAULTS, EDITOR_FLAG_HELP, editorFromFlags } from './editor-flags.ts';
import {
  SERVICE_ENV_HELP,
  BATCH_FLAG_DEFAULTS,
  BATCH_FLAG_HELP,
  maxBatchFromFlags,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  serviceAndTarget,
  TARGET_FLAG_CHOICES,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';

const defaults = {
  'service-env': undefined as string | undefined,
  ...TARGET_FLAG_DEFAULTS,
  ...BATCH_FLAG_DEFAULTS,
  'output-dir': 'runs/pilot',
  workers: 1,
  attempts: 1,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'run-pilot CALIBRATION',
  description:
    'Every episode CALIBRATION selected, attempted by one editor and evaluated in fresh processes; rerunning resumes.',
  examples: [
    'npx iwibench run-pilot runs/calibration.json --service-env runs/service.env --output-dir runs/pilot --workers 2 --editor-model gpt-6.1-terra',
  ],
  defaults,
  help: {
    'service-env': SERVICE_ENV_HELP,
    ...TARGET_FLAG_HELP,
    ...BATCH_FLAG_HELP,
    'output-dir': 'attempts/<family>-s<seed>-<editor>-a<k>/ and pilot.json',
    workers: 'editors at once against the one service',
    attempts: 'attempts per episode',
    'items-per-kind': '0: whole episodes; N: the first N items of each kind (smoke tests)',
    ...EDITOR_FLAG_HELP,
    ...JSON_FLAG_HELP,
  },
  integers: ['workers', 'attempts', 'items-per-kind', 'max-batch'],
  choices: { ...EDITOR_FLAG_CHOICES, ...TARGET_FLAG_CHOICES },
  positionals: { names: 'CALIBRATION', min: 1, max: 1 },
});

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommand(argv, command);
  const calibrationFile = positionals[0]!;
  const calibration = readCalibration(calibrationFile);
  const { config, label } = await editorFromFlags(flags);
  const outputDir = flags['output-dir'];
  mkdirSync(outputDir, { recursive: true });
  const { target, service, stop } = await serviceAndTarget(flags['service-env'], flags, outputDir);
  const started = Date.now();
  const stopProgress = showEvaluationProgress('pilot', { perAttempt: true });
  const summary = await runPilot({
    episodes: calibration.episodes,
    service,
    evaluator: Evaluator.open({
      location: target.location,
      device: deviceFromFlags(flags),
      precision: precisionFromFlags(flags),
      maxBatch: maxBatchFromFlags(flags),
      pristineCacheDir: path.join(outputDir, 'pristine-cache'),
    }),
    taskset: new Taskset({ tokenizer: target.tokenizer }),
    editor: config,
    editorLabel: label,
    outputDir,
    workers: flags.workers,
    attempts: flags.attempts,
    itemsPerKind: flags['items-per-kind'] || undefined,
    args: { command: 'run-pilot', calibration: calibrationFile, ...flags },
    onStart: (event) => {
      const line = resumeLine(event);
      if (line) process.stderr.write(`pilot ${line}\n`);
    },
    onProgress: ({ done, total, skipped, attempt, reward, error }) => {
      const eta = done > skipped ? ((Date.now() - started) / 1000 / (done - skipped)) * (total - done) : NaN;
      process.stderr.write(
        `pilot ${done}/${total} (${skipped} already done) ${attempt}: ${error ? `FAILED ${error}` : `reward ${reward?.toFixed(3)}`}${Number.isFinite(eta) ? `, ETA ${eta.toFixed(0)} s` : ''}\n`,
      );
    },
  }).finally(() => (stopProgress(), stop()));
  const failed = summary.attempts.filter((a) => a.status === 'failed');
  printResult(
    flags.json,
    'run-pilot',
    { output_dir: outputDir, attempts: summary.attempts.length, failed: failed.length },
    {
      wrote: [
        [path.join(outputDir, 'pilot.json'), 'every attempt with its status and reward'],
        [path.join(outputDir, 'attempts'), 'one folder per attempt: trace, patch, results.json'],
      ],
      figures: [attemptsLine(summary.attempts)],
    },
  );
  if (failed.length > 0) process.exitCode = 1;
}
