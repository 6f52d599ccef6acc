// npx iwibench run-prime --family F --seed S --model-dir DIR [--model ID] --output-dir D [--editor-model M] [--service-env F]
// One episode, one editor, evaluated in fresh processes: D/results.json. Without --service-env a service is started here.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Checkpoint } from '../service/model/checkpoint.ts';
import { Tokenizer } from '../service/model/tokenizer.ts';
import { runAttempt } from '../taskset/attempt.ts';
import { episodeSpec } from '../taskset/episode.ts';
import { readServiceEnv, startServiceProcess, type ServiceEnv } from '../taskset/service-process.ts';
import { parseFlags } from './args.ts';
import { EDITOR_FLAG_DEFAULTS, editorFromFlags } from './editor-flags.ts';

const defaults = {
  family: undefined as string | undefined,
  seed: -1,
  'control-seed': -1,
  'service-env': undefined as string | undefined,
  'model-dir': undefined as string | undefined,
  'cache-dir': undefined as string | undefined,
  model: undefined as string | undefined,
  revision: undefined as string | undefined,
  'output-dir': undefined as string | undefined,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['family', 'output-dir'] });
  if (flags.seed < 0) throw new Error('--seed is required (a non-negative integer)');
  const location = { modelDir: flags['model-dir'], cacheDir: flags['cache-dir'], modelId: flags.model, revision: flags.revision };
  const checkpoint = Checkpoint.open(location);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  checkpoint.close();
  const spec = episodeSpec(flags.family!, flags.seed, { tokenizer, controlSeed: flags['control-seed'] >= 0 ? flags['control-seed'] : undefined });
  const outputDir = flags['output-dir']!;
  mkdirSync(outputDir, { recursive: true });
  const { config, label } = editorFromFlags(flags);
  let service: ServiceEnv;
  let stop = async () => {};
  if (flags['service-env']) service = readServiceEnv(flags['service-env']);
  else {
    const started = await startServiceProcess({ modelDir: flags['model-dir'], cacheDir: flags['cache-dir'], model: flags.model, revision: flags.revision, outputDir: path.join(outputDir, 'service') });
    service = started;
    stop = started.stop;
  }
  process.stderr.write(`run-prime: ${spec.family} seed ${spec.seed} with ${label}\n`);
  const { results, run } = await runAttempt({ spec, service, location, editor: config, editorLabel: label, dir: outputDir, itemsPerKind: flags['items-per-kind'] || undefined, args: { command: 'run-prime', ...flags } }).finally(stop);
  process.stdout.write(JSON.stringify({ results: path.join(outputDir, 'results.json'), stop_reason: run.stopReason, score: results.score }) + '\n');
}
