// npx iwibench run-prime --family local_factual_update --seed 3 --model google/gemma-3-4b-it [--output-dir D]
//                        [--editor-model M] [--service-env F]
// One episode, one editor, evaluated in fresh processes: D/results.json. The service: --service-env, else the
// environment's, else one started here.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { runAttempt, Evaluator, Taskset } from '../taskset/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { familyProblems } from './family-flags.ts';
import { showEvaluationProgress } from './evaluation-progress.ts';
import { JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult, scoreLine } from './summary.ts';
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
  family: undefined as string | undefined,
  seed: undefined as number | undefined,
  'control-seed': undefined as number | undefined, // default: the episode seed
  'service-env': undefined as string | undefined,
  ...TARGET_FLAG_DEFAULTS,
  ...BATCH_FLAG_DEFAULTS,
  'output-dir': undefined as string | undefined, // default runs/prime/<family>-s<seed>
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'run-prime',
  description: 'One episode with one editor, evaluated in fresh processes.',
  examples: ['npx iwibench run-prime --family local_factual_update --seed 3 --model google/gemma-3-4b-it'],
  defaults,
  help: {
    family: 'the task family',
    seed: 'the episode seed',
    'control-seed': 'seed of the general controls; default: the episode seed',
    'service-env': SERVICE_ENV_HELP,
    ...TARGET_FLAG_HELP,
    ...BATCH_FLAG_HELP,
    'output-dir': 'trace, patch and results.json; default runs/prime/<family>-s<seed>',
    'items-per-kind': '0: whole episodes; N: the first N items of each kind (smoke tests)',
    ...EDITOR_FLAG_HELP,
    ...JSON_FLAG_HELP,
  },
  required: ['family', 'seed'],
  integers: ['seed', 'control-seed', 'items-per-kind', 'max-batch'],
  choices: { ...EDITOR_FLAG_CHOICES, ...TARGET_FLAG_CHOICES },
  check: (flags) => familyProblems(flags.family),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const { config, label } = await editorFromFlags(flags);
  const outputDir = flags['output-dir'] ?? path.join('runs', 'prime', `${flags.family}-s${flags.seed}`);
  mkdirSync(outputDir, { recursive: true });
  const { target, service, stop } = await serviceAndTarget(flags['service-env'], flags, outputDir);
  const task = new Taskset({ tokenizer: target.tokenizer }).task({
    family: flags.family!,
    seed: flags.seed!,
    controlSeed: flags['control-seed'],
  });
  process.stderr.write(`run-prime: ${task.spec.family} seed ${task.spec.seed} with ${label}\n`);
  const stopProgress = showEvaluationProgress('run-prime evaluation');
  const { results, run } = await runAttempt({
    task,
    service,
    evaluator: Evaluator.open({
      location: target.location,
      device: deviceFromFlags(flags),
      precision: precisionFromFlags(flags),
      maxBatch: maxBatchFromFlags(flags),
    }),
    editor: config,
    editorLabel: label,
    dir: outputDir,
    itemsPerKind: flags['items-per-kind'] || undefined,
    args: { command: 'run-prime', ...flags },
  }).finally(() => (stopProgress(), stop()));
  const resultsFile = path.join(outputDir, 'results.json');
  printResult(
    flags.json,
    'run-prime',
    { results: resultsFile, stop_reason: run.stopReason, score: results.score },
    {
      wrote: [
        [resultsFile, "the score and every item's outputs and verdicts"],
        [outputDir, 'the trace and the patch beside it'],
      ],
      figures: [scoreLine(results.score), `the editor stopped: ${run.stopReason}`],
    },
  );
}
