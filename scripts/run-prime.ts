// npx iwibench run-prime --family F --seed S --model-dir DIR [--model ID] --output-dir D [--editor-model M] [--service-env F]
// One episode, one editor, evaluated in fresh processes: D/results.json. Without --service-env a service is started here.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { runAttempt } from '../taskset/attempt.ts';
import { episodeSpec } from '../taskset/episode.ts';
import { parseFlags } from './args.ts';
import { EDITOR_FLAG_DEFAULTS, editorFromFlags } from './editor-flags.ts';
import { TARGET_FLAG_DEFAULTS, openTarget, serviceFor } from './target-flags.ts';

const defaults = {
  family: undefined as string | undefined,
  seed: -1,
  'control-seed': -1,
  'service-env': undefined as string | undefined,
  ...TARGET_FLAG_DEFAULTS,
  'output-dir': undefined as string | undefined,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['family', 'output-dir'] });
  if (flags.seed < 0) throw new Error('--seed is required (a non-negative integer)');
  const target = await openTarget(flags);
  const spec = episodeSpec(flags.family!, flags.seed, { tokenizer: target.tokenizer, controlSeed: flags['control-seed'] >= 0 ? flags['control-seed'] : undefined });
  const outputDir = flags['output-dir']!;
  mkdirSync(outputDir, { recursive: true });
  const { config, label } = editorFromFlags(flags);
  const { service, stop } = await serviceFor(flags['service-env'], flags, outputDir, target);
  process.stderr.write(`run-prime: ${spec.family} seed ${spec.seed} with ${label}\n`);
  const { results, run } = await runAttempt({ spec, service, location: target.location, editor: config, editorLabel: label, dir: outputDir, itemsPerKind: flags['items-per-kind'] || undefined, args: { command: 'run-prime', ...flags } }).finally(stop);
  process.stdout.write(JSON.stringify({ results: path.join(outputDir, 'results.json'), stop_reason: run.stopReason, score: results.score }) + '\n');
}
