// npx iwibench generate --model-dir DIR --prompt "What is the capital of France?" [--prompt ...] [--max-new-tokens 64]
// Greedy chat generation on pristine weights: a quick look at what a checkpoint says.
import { Checkpoint, Gemma3Engine, Tokenizer } from '../engine/index.ts';
import {
  TARGET_FLAG_CHOICES,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';
import { defineCommand, parseCommand } from './args.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  prompt: [] as string[],
  system: undefined as string | undefined,
  'max-new-tokens': 64,
  device: TARGET_FLAG_DEFAULTS.device,
  precision: TARGET_FLAG_DEFAULTS.precision,
};

export const command = defineCommand({
  usage: 'generate',
  description: 'Greedy chat generation on pristine weights, one JSON line per prompt.',
  examples: ['npx iwibench generate --model-dir toy/target --prompt "What is the capital of France?"'],
  defaults,
  help: {
    'model-dir': 'the checkpoint folder',
    revision: 'snapshot revision, for a cache repo folder',
    prompt: 'a user message',
    system: 'a system message before each prompt',
    'max-new-tokens': 'tokens to generate at most',
    device: TARGET_FLAG_HELP.device,
    precision: TARGET_FLAG_HELP.precision,
  },
  required: ['model-dir', 'prompt'],
  integers: ['max-new-tokens'],
  choices: TARGET_FLAG_CHOICES,
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const checkpoint = Checkpoint.open({ modelDir: flags['model-dir'], revision: flags.revision });
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  const engine = await Gemma3Engine.create({
    checkpoint,
    device: deviceFromFlags(flags),
    precision: precisionFromFlags(flags),
  });
  const prompts = flags.prompt.map((content) =>
    tokenizer.chatIds([
      ...(flags.system ? [{ role: 'system' as const, content: flags.system }] : []),
      { role: 'user', content },
    ]),
  );
  const results = await engine.generate(prompts, { maxNewTokens: flags['max-new-tokens'] });
  results.forEach((r, i) =>
    process.stdout.write(
      JSON.stringify({ prompt: flags.prompt[i], text: tokenizer.decode(r.outputIds), ...r, promptIds: undefined }) +
        '\n',
    ),
  );
  await engine.close();
}
