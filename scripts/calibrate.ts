// npx iwibench calibrate --model google/gemma-3-4b-it --seeds 60 --eligible-per-family 3 --output runs/calibration.json
// Pristine weights, seeds ascending across all ten families; the first N distinct eligible parameter sets per
// family. Writes F (every examined seed with its measurements and reasons) even when it fails; fails, naming the
// families, when any has fewer than N. Prints a summary (--json: the file, the episodes and the short families).
import { checkpointTokenizer, ItemEvaluator } from '../service/evaluate.ts';
import { writeJsonAtomic } from '../core/files.ts';
import { calibrate, Taskset, type FamilyId } from '../taskset/index.ts';
import { showEvaluationProgress } from './evaluation-progress.ts';
import { defineCommand, parseCommand } from './args.ts';
import { count, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';
import { familyList, familyProblems } from './family-flags.ts';
import {
  BATCH_FLAG_DEFAULTS,
  BATCH_FLAG_HELP,
  batchLimitFromFlags,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  fetchedLocation,
  TARGET_FLAG_CHOICES,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';

const defaults = {
  ...TARGET_FLAG_DEFAULTS,
  ...BATCH_FLAG_DEFAULTS,
  seeds: 60,
  'eligible-per-family': 3,
  families: undefined as string | undefined, // comma-separated subset, default all ten
  output: 'runs/calibration.json',
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'calibrate',
  description:
    'Pristine weights, seeds ascending across the families; the first N distinct eligible parameter sets per family.',
  examples: [
    'npx iwibench calibrate --model google/gemma-3-4b-it --seeds 60 --eligible-per-family 3 --output runs/calibration.json',
  ],
  defaults,
  help: {
    ...TARGET_FLAG_HELP,
    ...BATCH_FLAG_HELP,
    seeds: 'examine seeds 0…N−1',
    'eligible-per-family': 'distinct eligible parameter sets to select per family',
    families: 'comma-separated subset of the families; default all ten',
    output: 'the calibration file (every examined seed with its measurements and reasons)',
    ...JSON_FLAG_HELP,
  },
  integers: ['seeds', 'eligible-per-family', 'max-batch'],
  choices: TARGET_FLAG_CHOICES,
  check: (flags) => familyProblems(flags.families),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const families = familyList(flags.families);
  const location = await fetchedLocation(flags);
  const stopProgress = showEvaluationProgress('calibrate');
  const tokenizer = await checkpointTokenizer(location);
  const evaluator = await ItemEvaluator.open(location, {
    device: deviceFromFlags(flags),
    precision: precisionFromFlags(flags),
    batch: batchLimitFromFlags(flags),
  }).catch((error: unknown) => {
    stopProgress();
    throw error;
  });
  const started = Date.now();
  const result = await calibrate({
    evaluator,
    tokenizer,
    taskset: new Taskset({ tokenizer }),
    seeds: flags.seeds,
    eligiblePerFamily: flags['eligible-per-family'],
    families: families as FamilyId[],
    args: { command: 'calibrate', ...flags },
    onProgress: ({ family, seed, eligible, selected }) => {
      const elapsed = (Date.now() - started) / 1000;
      process.stderr.write(
        `calibrate ${family} seed ${seed}: ${eligible ? 'eligible' : 'not eligible'} (${selected}/${flags['eligible-per-family']} selected, ${elapsed.toFixed(0)} s)\n`,
      );
    },
  }).finally(stopProgress);
  await evaluator.close();
  writeJsonAtomic(flags.output, result);
  const summary = { output: flags.output, episodes: result.episodes.length, short: result.short };
  printResult(flags.json, 'calibrate', summary, {
    wrote: [[flags.output, 'every examined seed with its measurements and reasons']],
    figures: [
      `${count(result.episodes.length, 'eligible episode')} selected` +
        (result.short.length > 0 ? `; too few in ${result.short.join(', ')}` : ''),
    ],
  });
  if (result.short.length > 0) {
    const counts = result.short.map(
      (f) =>
        `${f} (${result.families[f]!.selected.length}/${flags['eligible-per-family']} within ${flags.seeds} seeds)`,
    );
    throw new Error(
      `too few eligible parameter sets: ${counts.join(', ')}; see ${flags.output} for every seed's measurements and reasons`,
    );
  }
}
