// npx iwibench service --model google/gemma-3-4b-it --model-dir DIR --output-dir runs/X [--host 127.0.0.1 --port 8768]
//                      [--call-time-limit 120] [--revision REV | --cache-dir HF_CACHE]
// Needs IWIBENCH_ADMIN_TOKEN and IWIBENCH_EDITOR_TOKEN (both set, distinct). Prints {"url": …} on stdout when ready.
import { startService } from '../service/server.ts';
import type { Device } from '../service/model/runtime.ts';
import { parseFlags } from './args.ts';

const defaults = {
  model: undefined as string | undefined,
  'model-dir': undefined as string | undefined,
  'cache-dir': undefined as string | undefined,
  revision: undefined as string | undefined,
  'output-dir': undefined as string | undefined,
  host: '127.0.0.1',
  port: 8768,
  device: 'cpu',
  threads: 0, // 0: one per logical CPU
  'call-time-limit': 120, // seconds of running time one call may take (its own slices, not its waits)
  'log-level': 'info',
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['output-dir'] });
  if (flags.device !== 'cpu') throw new Error('--device must be cpu: the engine runs its BF16 projections on the CPU (README, "GPU")');
  if (!(flags['call-time-limit'] > 0)) throw new Error('--call-time-limit must be a positive number of seconds');
  const { app, url } = await startService({
    modelDir: flags['model-dir'],
    cacheDir: flags['cache-dir'],
    modelId: flags.model,
    revision: flags.revision,
    outputDir: flags['output-dir']!,
    host: flags.host,
    port: flags.port,
    device: flags.device as Device,
    threads: flags.threads || undefined,
    callTimeLimitSeconds: flags['call-time-limit'],
    logLevel: flags['log-level'],
    args: flags,
  });
  process.stdout.write(JSON.stringify({ url, model: flags.model ?? null, output_dir: flags['output-dir'] }) + '\n');
  const stop = async () => {
    await app.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
