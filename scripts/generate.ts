// npx iwibench generate --model-dir DIR --prompt "What is the capital of France?" [--prompt ...] [--max-new-tokens 64]
// Greedy chat generation on pristine weights: a quick look at what a checkpoint says.
import { Checkpoint } from '../service/model/checkpoint.ts';
import { Gemma3Engine, type Device } from '../service/model/runtime.ts';
import { Tokenizer } from '../service/model/tokenizer.ts';
import { parseFlags } from './args.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  prompt: [] as string[],
  system: undefined as string | undefined,
  'max-new-tokens': 64,
  device: 'cpu',
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['model-dir'] });
  if (flags.prompt.length === 0) throw new Error('give at least one --prompt');
  const checkpoint = Checkpoint.open({ modelDir: flags['model-dir'], revision: flags.revision });
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  const engine = await Gemma3Engine.create({ checkpoint, device: flags.device as Device });
  const prompts = flags.prompt.map((content) => tokenizer.chatIds([...(flags.system ? [{ role: 'system' as const, content: flags.system }] : []), { role: 'user', content }]));
  const results = await engine.generate(prompts, { maxNewTokens: flags['max-new-tokens'] });
  results.forEach((r, i) => process.stdout.write(JSON.stringify({ prompt: flags.prompt[i], text: tokenizer.decode(r.outputIds), ...r, promptIds: undefined }) + '\n'));
  await engine.close();
}
