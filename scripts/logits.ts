// npx iwibench logits --model-dir DIR --ids 2,105,2364,... --out FILE.npy [--device cpu|cuda|webgpu|ort-cpu]
// Float32 logits of every position, shape [T, vocab], for checks against independent implementations.
import { Checkpoint, Gemma3Engine, writeNpy } from '../engine/index.ts';
import {
  TARGET_FLAG_CHOICES,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';
import { defineCommand, parseCommand, parseIntList } from './args.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  ids: undefined as string | undefined,
  out: undefined as string | undefined,
  device: TARGET_FLAG_DEFAULTS.device,
  precision: TARGET_FLAG_DEFAULTS.precision,
  // Positions per run through the KV cache; bounds the size of one logits output.
  chunk: 64,
};

export const command = defineCommand({
  usage: 'logits',
  description: 'Float32 logits of every position, shape [T, vocab], as .npy.',
  examples: ['npx iwibench logits --model-dir toy/target --ids 2,105,2364 --out /tmp/logits.npy'],
  defaults,
  help: {
    'model-dir': 'the checkpoint folder',
    revision: 'snapshot revision, for a cache repo folder',
    ids: 'comma-separated token ids',
    out: 'the .npy file to write',
    device: TARGET_FLAG_HELP.device,
    precision: TARGET_FLAG_HELP.precision,
    chunk: 'positions per run through the KV cache',
  },
  required: ['model-dir', 'ids', 'out'],
  integers: ['chunk'],
  choices: TARGET_FLAG_CHOICES,
  check: (flags) => {
    try {
      if (flags.ids !== undefined) parseIntList(flags.ids, '--ids');
      return [];
    } catch (error) {
      return [(error as Error).message];
    }
  },
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const ids = parseIntList(flags.ids!, '--ids');
  const checkpoint = Checkpoint.open({ modelDir: flags['model-dir'], revision: flags.revision });
  const engine = await Gemma3Engine.create({
    checkpoint,
    device: deviceFromFlags(flags),
    precision: precisionFromFlags(flags),
  });
  const logits = await engine.logits(ids, { chunk: flags.chunk });
  writeNpy(flags.out!, logits, [ids.length, checkpoint.config.vocab_size]);
  await engine.close();
  process.stdout.write(
    JSON.stringify({
      out: flags.out,
      shape: [ids.length, checkpoint.config.vocab_size],
      model: checkpoint.modelId,
      revision: checkpoint.revision,
    }) + '\n',
  );
}
