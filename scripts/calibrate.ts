// npx iwibench calibrate --model google/gemma-3-4b-it --cache-dir D --revision R --seeds 60 --eligible-per-family 3 --output F
// npx iwibench calibrate --model-dir DIR --seeds 60 --output F
// Pristine weights, seeds ascending across all ten families; the first N distinct eligible parameter sets per
// family. Writes F (every examined seed with its measurements and reasons) even when it fails; fails, naming the
// families, when any has fewer than N.
import { ItemEvaluator } from '../service/evaluate.ts';
import { writeJsonAtomic } from '../service/files.ts';
import { calibrate } from '../taskset/calibration.ts';
import { FAMILY_IDS, type FamilyId } from '../taskset/types.ts';
import { parseFlags } from './args.ts';

const defaults = {
  model: undefined as string | undefined,
  'model-dir': undefined as string | undefined,
  'cache-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  seeds: 60,
  'eligible-per-family': 3,
  families: undefined as string | undefined, // comma-separated subset, default all ten
  output: undefined as string | undefined,
  device: 'cpu',
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['output'] });
  const families = flags.families ? flags.families.split(',').map((f) => f.trim()) : [...FAMILY_IDS];
  const unknown = families.filter((f) => !(FAMILY_IDS as readonly string[]).includes(f));
  if (unknown.length > 0) throw new Error(`unknown families: ${unknown.join(', ')} (known: ${FAMILY_IDS.join(', ')})`);
  const evaluator = await ItemEvaluator.open({ modelDir: flags['model-dir'], cacheDir: flags['cache-dir'], modelId: flags.model, revision: flags.revision }, { device: flags.device as 'cpu' });
  const started = Date.now();
  const result = await calibrate({
    evaluator,
    tokenizer: evaluator.tokenizer,
    seeds: flags.seeds,
    eligiblePerFamily: flags['eligible-per-family'],
    families: families as FamilyId[],
    args: { command: 'calibrate', ...flags },
    onProgress: ({ family, seed, eligible, selected }) => {
      const elapsed = (Date.now() - started) / 1000;
      process.stderr.write(`calibrate ${family} seed ${seed}: ${eligible ? 'eligible' : 'not eligible'} (${selected}/${flags['eligible-per-family']} selected, ${elapsed.toFixed(0)} s)\n`);
    },
  });
  await evaluator.close();
  writeJsonAtomic(flags.output!, result);
  const summary = { output: flags.output, episodes: result.episodes.length, short: result.short };
  process.stdout.write(JSON.stringify(summary) + '\n');
  if (result.short.length > 0) {
    const counts = result.short.map((f) => `${f} (${result.families[f]!.selected.length}/${flags['eligible-per-family']} within ${flags.seeds} seeds)`);
    throw new Error(`too few eligible parameter sets: ${counts.join(', ')}; see ${flags.output} for every seed's measurements and reasons`);
  }
}
