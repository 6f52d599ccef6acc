// npx iwibench evaluate-patch --model-dir DIR --family F --seed S [--control-seed C] [--patch PATCH_DIR] --output-dir OUT
// Scores a patch: terminal items and general controls generated on pristine and patched weights, each in a fresh
// process, then checked and scored; writes OUT/results.json and prints its score as JSON.
// (`--worker --job FILE --out FILE` is the fresh process itself, started by the runners.)
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { evaluateItems, type EvaluationItem } from '../service/evaluate.ts';
import { writeJsonAtomic } from '../service/files.ts';
import { Checkpoint, type CheckpointLocation } from '../service/model/checkpoint.ts';
import { Tokenizer } from '../service/model/tokenizer.ts';
import { episodeSpec } from '../taskset/episode.ts';
import { evaluateEpisode } from '../taskset/evaluation.ts';
import { parseFlags } from './args.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  family: undefined as string | undefined,
  seed: -1,
  'control-seed': -1, // default: the episode seed
  patch: undefined as string | undefined,
  'output-dir': undefined as string | undefined,
  worker: false,
  job: undefined as string | undefined,
  out: undefined as string | undefined,
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  if (flags.worker) return worker(flags.job, flags.out);
  for (const name of ['model-dir', 'family', 'output-dir'] as const) if (!flags[name]) throw new Error(`--${name} is required`);
  if (flags.seed < 0) throw new Error('--seed is required (a non-negative integer)');
  const location: CheckpointLocation = { modelDir: flags['model-dir'], revision: flags.revision };
  const checkpoint = Checkpoint.open(location);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  checkpoint.close();
  const spec = episodeSpec(flags.family!, flags.seed, { tokenizer, controlSeed: flags['control-seed'] >= 0 ? flags['control-seed'] : undefined });
  mkdirSync(flags['output-dir']!, { recursive: true });
  const results = await evaluateEpisode({ location, spec, outputDir: flags['output-dir']!, patchDir: flags.patch, args: { command: 'evaluate-patch', ...flags } });
  process.stdout.write(JSON.stringify({ results: path.join(flags['output-dir']!, 'results.json'), score: results.score }) + '\n');
}

/** The fresh process: read a job, generate every item on one weight set, write the raw outputs. */
async function worker(job: string | undefined, out: string | undefined): Promise<void> {
  if (!job || !out) throw new Error('--worker needs --job FILE and --out FILE');
  const spec = JSON.parse(readFileSync(job, 'utf8')) as { location: CheckpointLocation; items: EvaluationItem[]; patch_dir: string | null };
  const run = await evaluateItems(spec.location, spec.items, {
    patchDir: spec.patch_dir ?? undefined,
    onProgress: (done, total) => process.stderr.write(`\r${spec.patch_dir ? 'patched' : 'pristine'}: ${done}/${total} items`),
  });
  process.stderr.write('\n');
  writeJsonAtomic(out, run);
}
