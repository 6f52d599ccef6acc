// npx iwibench run-pilot CALIBRATION --service-env F --model-dir DIR --output-dir D [--workers 2] [--editor-model M]
//                        [--editor-base-url U] [--api chat|responses] [--reasoning-effort E] [--attempts 1]
// Every selected episode of CALIBRATION (from `calibrate`), attempted by one editor; resumable (rerun the same
// command: completed attempts are kept, interrupted ones rerun). Without --service-env a service is started here.
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Checkpoint } from '../service/model/checkpoint.ts';
import { Tokenizer } from '../service/model/tokenizer.ts';
import type { Calibration } from '../taskset/calibration.ts';
import { runPilot } from '../taskset/pilot.ts';
import { AdminClient } from '../taskset/service-client.ts';
import { readServiceEnv, startServiceProcess, type ServiceEnv } from '../taskset/service-process.ts';
import { parseFlags } from './args.ts';
import { EDITOR_FLAG_DEFAULTS, editorFromFlags } from './editor-flags.ts';

const defaults = {
  'service-env': undefined as string | undefined,
  'model-dir': undefined as string | undefined,
  'cache-dir': undefined as string | undefined,
  model: undefined as string | undefined,
  revision: undefined as string | undefined,
  'output-dir': undefined as string | undefined,
  workers: 1,
  attempts: 1,
  'items-per-kind': 0, // 0: whole episodes; N: the first N items of each kind (smoke tests)
  ...EDITOR_FLAG_DEFAULTS,
};

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseFlags(argv, defaults, { positionals: true, required: ['output-dir'] });
  if (positionals.length !== 1) throw new Error('usage: npx iwibench run-pilot CALIBRATION --output-dir D [flags]');
  const calibration = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Calibration;
  if (!Array.isArray(calibration.episodes)) throw new Error(`${positionals[0]} is not a calibration file (no "episodes")`);
  const location = { modelDir: flags['model-dir'], cacheDir: flags['cache-dir'], modelId: flags.model, revision: flags.revision };
  const checkpoint = Checkpoint.open(location);
  const tokenizer = await Tokenizer.load(checkpoint.dir);
  checkpoint.close();
  const outputDir = flags['output-dir']!;
  mkdirSync(outputDir, { recursive: true });
  const { config, label } = editorFromFlags(flags);

  let service: ServiceEnv;
  let stop = async () => {};
  if (flags['service-env']) service = readServiceEnv(flags['service-env']);
  else {
    const started = await startServiceProcess({ ...location, modelDir: flags['model-dir'], outputDir: path.join(outputDir, 'service') });
    service = started;
    stop = started.stop;
  }
  const health = await new AdminClient(service.url, service.adminToken).health();
  if (health.model !== checkpoint.modelId || health.revision !== checkpoint.revision) {
    throw new Error(`the service serves ${health.model}@${health.revision}, but evaluation would use ${checkpoint.modelId}@${checkpoint.revision}`);
  }
  const started = Date.now();
  const summary = await runPilot({
    episodes: calibration.episodes,
    service,
    location,
    tokenizer,
    editor: config,
    editorLabel: label,
    outputDir,
    workers: flags.workers,
    attempts: flags.attempts,
    itemsPerKind: flags['items-per-kind'] || undefined,
    args: { command: 'run-pilot', calibration: positionals[0], ...flags },
    onProgress: ({ done, total, skipped, attempt, reward, error }) => {
      const eta = done > skipped ? ((Date.now() - started) / 1000 / (done - skipped)) * (total - done) : NaN;
      process.stderr.write(`pilot ${done}/${total} (${skipped} already done) ${attempt}: ${error ? `FAILED ${error}` : `reward ${reward?.toFixed(3)}`}${Number.isFinite(eta) ? `, ETA ${eta.toFixed(0)} s` : ''}\n`);
    },
  }).finally(stop);
  const failed = summary.attempts.filter((a) => a.status === 'failed');
  process.stdout.write(JSON.stringify({ output_dir: outputDir, attempts: summary.attempts.length, failed: failed.length }) + '\n');
  if (failed.length > 0) process.exitCode = 1;
}
