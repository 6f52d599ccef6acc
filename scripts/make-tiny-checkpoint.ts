// npx iwibench make-tiny-checkpoint --out DIR --preset tiny|tiny-4b|gemma-3-1b-shape|gemma-3-4b-shape --seed N
// A seeded random Gemma 3 checkpoint (real tokenizer, random weights): for tests (tiny, tiny-4b) and benchmarks.
import { makeTinyCheckpoint, PRESETS, type Preset } from '../service/model/tiny-checkpoint.ts';
import { parseFlags } from './args.ts';

const defaults = { out: undefined as string | undefined, preset: 'tiny', seed: 0 };

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['out'] });
  if (!PRESETS.includes(flags.preset as Preset)) throw new Error(`--preset must be one of ${PRESETS.join(', ')}`);
  const started = Date.now();
  const dir = makeTinyCheckpoint({ out: flags.out!, preset: flags.preset as Preset, seed: flags.seed });
  process.stdout.write(JSON.stringify({ out: dir, preset: flags.preset, seed: flags.seed, seconds: (Date.now() - started) / 1000 }) + '\n');
}
