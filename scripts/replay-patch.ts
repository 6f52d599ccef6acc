// npx iwibench replay-patch runs/pilot/attempts/<attempt>/results.json --control-seed 1001 [--output-dir D]
// The same patch and target questions with a new control seed, pristine and edited in fresh processes. The original
// controls are run again too, so D/replay.json reports retention on new controls and on repeated ones apart. The
// patch must be the one RESULTS recorded (its id, patch.sha256): a folder holding any other is refused. The target
// questions are the ones RESULTS recorded: where today's family code would generate others, the replay is refused
// naming the first difference, unless --regenerate takes today's. Prints a summary (--json: replay.json's document).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { writeJsonAtomic } from '../core/files.ts';
import {
  Evaluator,
  RESULTS_FORMAT,
  type ItemResult,
  type ResultsFile,
  recordedTerminal,
  Taskset,
} from '../taskset/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { showEvaluationProgress } from './evaluation-progress.ts';
import { controlsLine, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult, scoreLine } from './summary.ts';
import {
  BATCH_FLAG_DEFAULTS,
  BATCH_FLAG_HELP,
  maxBatchFromFlags,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  openTarget,
  TARGET_FLAG_CHOICES,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';

const defaults = {
  'control-seed': undefined as number | undefined,
  ...TARGET_FLAG_DEFAULTS,
  precision: undefined as string | undefined, // default: the precision RESULTS was scored at
  ...BATCH_FLAG_DEFAULTS,
  'output-dir': undefined as string | undefined, // default: RESULTS' folder + /replay-c<control-seed>
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  regenerate: false, // take today's target questions instead of the recorded ones
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'replay-patch RESULTS',
  description:
    'The patch of RESULTS (a results.json) on the same target questions with new controls; the original controls again, apart.',
  examples: [
    'npx iwibench replay-patch runs/pilot/attempts/local_factual_update-s3-gpt-6.1-terra-a0/results.json --control-seed 1001',
  ],
  defaults,
  help: {
    'control-seed': 'seed of the new general controls',
    ...TARGET_FLAG_HELP,
    ...BATCH_FLAG_HELP,
    model: 'target id; default: the one RESULTS names (looked up in the Hugging Face cache)',
    precision: `${TARGET_FLAG_HELP.precision}; default: the one RESULTS was scored at (float32 for results of before the setting)`,
    'output-dir': "replay.json and results.json; default: RESULTS' folder/replay-c<control-seed>",
    'items-per-kind': '0: whole episodes; N: the first N items of each kind (smoke tests)',
    regenerate:
      "the target questions today's family code generates, where they differ from those RESULTS recorded (refused otherwise)",
    ...JSON_FLAG_HELP,
  },
  required: ['control-seed'],
  integers: ['control-seed', 'items-per-kind', 'max-batch'],
  positionals: { names: 'RESULTS', min: 1, max: 1 },
  choices: TARGET_FLAG_CHOICES,
});

/** Of the items the pristine model answered correctly, the share the patched model still answers correctly. */
function retention(items: ItemResult[]) {
  const baseCorrect = items.filter((i) => i.base.passed);
  const kept = baseCorrect.filter((i) => i.edited.passed);
  return {
    items: items.length,
    base_correct: baseCorrect.length,
    retained: kept.length,
    retention: baseCorrect.length > 0 ? kept.length / baseCorrect.length : null,
  };
}

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommand(argv, command);
  const resultsFile = positionals[0]!;
  const original = JSON.parse(readFileSync(resultsFile, 'utf8')) as ResultsFile;
  if (original.format !== RESULTS_FORMAT) throw new Error(`${resultsFile} is not an ${RESULTS_FORMAT} file`);
  if (!original.patch) throw new Error(`${resultsFile} records no patch to replay`);
  const patchDir = existsSync(original.patch.dir) ? original.patch.dir : path.join(path.dirname(resultsFile), 'patch');
  // Without target flags, the checkpoint RESULTS was made on, from the Hugging Face cache.
  const recorded =
    flags['model-dir'] || flags.model
      ? {}
      : { model: original.versions.model_id, revision: original.versions.revision };
  // The arithmetic the patch was scored in, unless told otherwise (results of before the setting: float32).
  const precision = precisionFromFlags({ precision: flags.precision ?? original.evaluation?.precision ?? 'float32' });
  const { location, tokenizer, revision } = await openTarget({ ...flags, ...recorded, precision });
  if (revision !== original.versions.revision)
    throw new Error(
      `${resultsFile} was made on revision ${original.versions.revision}, this checkpoint is ${revision}`,
    );
  const { family, seed, control_seed: originalSeed } = original.episode;
  const itemsPerKind = flags['items-per-kind'] || undefined;
  const taskset = new Taskset({ tokenizer });
  const today = taskset.task({ family, seed, controlSeed: flags['control-seed']! });
  const scoredOn = recordedTerminal(original.items ?? [], today.spec);
  if ('difference' in scoredOn && !flags.regenerate)
    throw new Error(
      `${resultsFile}: today's family code would ask other target questions than the patch was scored on (${scoredOn.difference}); --regenerate replays on today's`,
    );
  const questions = flags.regenerate ? 'regenerated' : 'recorded';
  const task = ('terminal' in scoredOn && !flags.regenerate ? today.withTerminal(scoredOn.terminal) : today).subset(
    itemsPerKind,
  );
  const newControls = task.spec.controls;
  const originalControls = taskset.task({ family, seed, controlSeed: originalSeed }).subset(itemsPerKind).spec.controls;
  const newIds = new Set(newControls.map((c) => c.id));
  const repeatedIds = new Set(originalControls.map((c) => c.id));
  const merged = task.withControls([...newControls, ...originalControls.filter((c) => !newIds.has(c.id))]);
  const outputDir = flags['output-dir'] ?? path.join(path.dirname(resultsFile), `replay-c${flags['control-seed']}`);
  mkdirSync(outputDir, { recursive: true });
  const patch = { dir: patchDir, id: original.patch.sha256 };
  const stopProgress = showEvaluationProgress('replay-patch');
  const evaluator = Evaluator.open({
    location,
    device: deviceFromFlags(flags),
    precision,
    maxBatch: maxBatchFromFlags(flags),
  });
  const results = await evaluator
    .evaluate(merged, patch, {
      outputDir,
      editor: original.editor,
      resources: original.resources,
      args: { command: 'replay-patch', results: resultsFile, ...flags },
    })
    .finally(stopProgress);
  const controls = results.items.filter((i) => i.kind === 'control');
  // The repeated controls' outputs against the recorded ones: under one arithmetic they are the same bits (greedy
  // tokens), so a difference there is the replay's inputs', never the machine's.
  const recordedItems = new Map((original.items ?? []).map((item) => [item.id, item]));
  const repeated = controls.filter((i) => repeatedIds.has(i.id) && recordedItems.has(i.id));
  const reproduced = repeated.filter(
    (i) =>
      recordedItems.get(i.id)!.base.output === i.base.output &&
      recordedItems.get(i.id)!.edited.output === i.edited.output,
  ).length;
  const arithmetic = {
    recorded: original.evaluation?.arithmetic ?? null,
    replay: results.evaluation.arithmetic!,
    repeated_outputs_reproduced: `${reproduced}/${repeated.length}`,
  };
  const replay = {
    original: resultsFile,
    family,
    seed,
    original_control_seed: originalSeed,
    control_seed: flags['control-seed'],
    questions,
    score: results.score,
    new_controls: retention(controls.filter((i) => newIds.has(i.id) && !repeatedIds.has(i.id))),
    repeated_controls: retention(controls.filter((i) => repeatedIds.has(i.id))),
    original_reward: original.score.reward,
    arithmetic,
  };
  const replayFile = path.join(outputDir, 'replay.json');
  writeJsonAtomic(replayFile, replay);
  printResult(flags.json, 'replay-patch', replay, {
    wrote: [
      [replayFile, 'the replay: score, new and repeated controls'],
      [path.join(outputDir, 'results.json'), "every item's outputs and verdicts"],
    ],
    figures: [
      `${scoreLine(results.score)}; recorded reward ${original.score.reward.toFixed(3)}`,
      controlsLine('new controls', replay.new_controls),
      controlsLine('repeated controls', replay.repeated_controls),
      arithmeticLine(arithmetic),
    ],
  });
}

/** The recorded arithmetic and this run's, and whether the repeated controls reproduced their recorded outputs. */
function arithmeticLine(a: { recorded: string | null; replay: string; repeated_outputs_reproduced: string }): string {
  const same = a.recorded === a.replay;
  const verdict = same
    ? `the same arithmetic: the repeated controls reproduced ${a.repeated_outputs_reproduced} recorded outputs bit for bit`
    : `${a.recorded === null ? 'the recorded arithmetic is unnamed (results of before its name)' : 'a different arithmetic'}: differences may be the arithmetic's, not the patch's (${a.repeated_outputs_reproduced} repeated outputs reproduced)`;
  return `arithmetic: recorded ${a.recorded ?? 'unnamed'}, this run ${a.replay}; ${verdict}`;
}
