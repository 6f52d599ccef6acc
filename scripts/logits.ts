// npx iwibench logits --model-dir DIR --ids 2,105,2364,... --out FILE.npy [--device cpu|cuda]
// Float32 logits of every position, shape [T, vocab], for checks against independent implementations.
import { Checkpoint } from '../service/model/checkpoint.ts';
import { writeNpy } from '../service/model/npy.ts';
import { Gemma3Engine, type Device } from '../service/model/runtime.ts';
import { parseFlags, parseIntList } from './args.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  ids: undefined as string | undefined,
  out: undefined as string | undefined,
  device: 'cpu',
  // Positions per run through the KV cache; bounds the size of one logits output.
  chunk: 64,
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['model-dir', 'ids', 'out'] });
  const ids = parseIntList(flags.ids!, '--ids');
  const checkpoint = Checkpoint.open({ modelDir: flags['model-dir'], revision: flags.revision });
  const engine = await Gemma3Engine.create({ checkpoint, device: flags.device as Device });
  const logits = await engine.logits(ids, { chunk: flags.chunk });
  writeNpy(flags.out!, logits, [ids.length, checkpoint.config.vocab_size]);
  await engine.close();
  process.stdout.write(JSON.stringify({ out: flags.out, shape: [ids.length, checkpoint.config.vocab_size], model: checkpoint.modelId, revision: checkpoint.revision }) + '\n');
}
