// npx iwibench evaluate-patch --model-dir DIR --family F --seed S [--control-seed C] [--patch PATCH_DIR --patch-id SHA256] --output-dir OUT [--device D]
// Scores a patch (the one of id --patch-id, as submit reported it; a folder holding any other is refused): terminal
// items and general controls generated on pristine and patched weights, each in a fresh process, then checked and
// scored; writes OUT/results.json and prints a summary (--json: its path and score as JSON). (The fresh process is
// service/evaluate-worker.ts.)
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Checkpoint, type CheckpointLocation, Tokenizer } from '../engine/index.ts';
import { patchSummary } from '../service/evaluate.ts';
import { Evaluator, Taskset } from '../taskset/index.ts';
import { showEvaluationProgress } from './evaluation-progress.ts';
import { defineCommand, parseCommand } from './args.ts';
import { JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult, scoreLine } from './summary.ts';
import {
  BATCH_FLAG_DEFAULTS,
  BATCH_FLAG_HELP,
  maxBatchFromFlags,
  TARGET_FLAG_CHOICES,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  family: undefined as string | undefined,
  seed: -1,
  'control-seed': -1, // default: the episode seed
  patch: undefined as string | undefined,
  'patch-id': undefined as string | undefined, // the id the patch folder must hold
  'output-dir': undefined as string | undefined,
  device: TARGET_FLAG_DEFAULTS.device,
  precision: TARGET_FLAG_DEFAULTS.precision,
  ...BATCH_FLAG_DEFAULTS,
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'evaluate-patch',
  description:
    'Terminal items and general controls on pristine and patched weights, each in a fresh process, checked and scored.',
  examples: [
    'npx iwibench evaluate-patch --model-dir toy/target --family local_factual_update --seed 3 --patch P --patch-id SHA256 --output-dir runs/eval',
  ],
  defaults,
  help: {
    'model-dir': 'the target checkpoint folder',
    revision: 'the revision recorded for a plain folder',
    family: 'the task family',
    seed: 'the episode seed',
    'control-seed': 'seed of the general controls; -1: the episode seed',
    patch: 'the patch folder (patch.json, patch.safetensors); none: pristine only',
    'patch-id': 'with --patch: the id the folder must hold (as submit reported it)',
    'output-dir': 'results.json',
    device: TARGET_FLAG_HELP.device,
    precision: TARGET_FLAG_HELP.precision,
    ...BATCH_FLAG_HELP,
    ...JSON_FLAG_HELP,
  },
  numbers: ['seed', 'control-seed'],
  integers: ['max-batch'],
  choices: TARGET_FLAG_CHOICES,
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  for (const name of ['model-dir', 'family', 'output-dir'] as const)
    if (!flags[name]) throw new Error(`--${name} is required`);
  if (flags.seed < 0) throw new Error('--seed is required (a non-negative integer)');
  const patchId = flags['patch-id'];
  if ((flags.patch === undefined) !== (patchId === undefined))
    throw new Error('--patch and --patch-id go together: the folder and the patch id it must hold');
  if (patchId !== undefined && !/^[0-9a-f]{64}$/.test(patchId))
    throw new Error(`--patch-id must be a patch id (64 hex digits), got ${JSON.stringify(patchId)}`);
  const patch = flags.patch ? { dir: flags.patch, id: patchId! } : undefined;
  // Every refusal before the tokenizer loads (seconds): the flags, and a folder holding another patch.
  const settings = {
    device: deviceFromFlags(flags),
    precision: precisionFromFlags(flags),
    maxBatch: maxBatchFromFlags(flags),
  };
  if (patch) patchSummary(patch);
  const location: CheckpointLocation = { modelDir: flags['model-dir'], revision: flags.revision };
  const checkpoint = Checkpoint.open(location);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  checkpoint.close();
  const controlSeed = flags['control-seed'] >= 0 ? flags['control-seed'] : undefined;
  const task = new Taskset({ tokenizer }).task({ family: flags.family!, seed: flags.seed, controlSeed });
  mkdirSync(flags['output-dir']!, { recursive: true });
  const stopProgress = showEvaluationProgress('evaluate-patch');
  const evaluator = Evaluator.open({ location, ...settings });
  const results = await evaluator
    .evaluate(task, patch, {
      outputDir: flags['output-dir']!,
      args: { command: 'evaluate-patch', ...flags },
    })
    .finally(stopProgress);
  const resultsFile = path.join(flags['output-dir']!, 'results.json');
  printResult(
    flags.json,
    'evaluate-patch',
    { results: resultsFile, score: results.score },
    { wrote: [[resultsFile, "the score and every item's outputs and verdicts"]], figures: [scoreLine(results.score)] },
  );
}
