// npx iwibench make-tiny-checkpoint --out DIR --preset tiny|tiny-4b|gemma-3-1b-shape|gemma-3-4b-shape --seed N
// A seeded random Gemma 3 checkpoint (real tokenizer, random weights): for tests (tiny, tiny-4b) and benchmarks.
import { makeTinyCheckpoint, type Preset, PRESETS } from '../engine/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';

const defaults = { out: undefined as string | undefined, preset: 'tiny', seed: 0, ...JSON_FLAG_DEFAULTS };

export const command = defineCommand({
  usage: 'make-tiny-checkpoint',
  description: 'A seeded random Gemma 3 checkpoint (config.json, BF16 safetensors, the real tokenizer files).',
  examples: ['npx iwibench make-tiny-checkpoint --out /tmp/tiny --preset tiny --seed 7'],
  defaults,
  help: { out: 'the folder to write', preset: 'the shape', seed: "the weights' seed", ...JSON_FLAG_HELP },
  required: ['out'],
  integers: ['seed'],
  choices: { preset: PRESETS },
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const started = Date.now();
  const dir = makeTinyCheckpoint({ out: flags.out!, preset: flags.preset as Preset, seed: flags.seed });
  const seconds = (Date.now() - started) / 1000;
  printResult(
    flags.json,
    'make-tiny-checkpoint',
    { out: dir, preset: flags.preset, seed: flags.seed, seconds },
    {
      wrote: [[dir, `a random ${flags.preset} checkpoint, seed ${flags.seed}`]],
      figures: [`${seconds.toFixed(1)} s`],
    },
  );
}
