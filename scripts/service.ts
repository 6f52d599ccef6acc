// npx iwibench service --model google/gemma-3-4b-it --output-dir runs/service [--host 127.0.0.1 --port 8768]
//                      [--call-time-limit 120] [--revision REV] [--cache-dir HF_CACHE | --model-dir DIR]
// Needs IWIBENCH_ADMIN_TOKEN and IWIBENCH_EDITOR_TOKEN (both set, distinct). Prints {"url", "model", "revision", …} on
// stdout when ready (the model and revision of the checkpoint it loaded); stops on SIGINT or SIGTERM.
import { DEFAULT_SERVICE_HOST, DEFAULT_SERVICE_PORT } from '../service/api/index.ts';
import { startService } from '../service/server.ts';
import { defineCommand, parseCommand } from './args.ts';
import {
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  fetchedLocation,
  TARGET_FLAG_CHOICES,
  deviceFromFlags,
  precisionFromFlags,
} from './target-flags.ts';

const defaults = {
  ...TARGET_FLAG_DEFAULTS,
  'output-dir': 'runs/service',
  host: DEFAULT_SERVICE_HOST,
  port: DEFAULT_SERVICE_PORT,
  threads: 0, // 0: one per logical CPU
  'call-time-limit': 120, // seconds of running time one call may take (its own slices, not its waits)
  'log-level': 'info',
};

export const command = defineCommand({
  usage: 'service',
  description: 'Loads the target once and serves episodes, tools and the OpenAI-compatible endpoints until stopped.',
  examples: ['npx iwibench service --model google/gemma-3-4b-it --output-dir runs/service &'],
  defaults,
  help: {
    ...TARGET_FLAG_HELP,
    'output-dir': 'episodes (specs, states, write ops) and service.json',
    host: 'address to listen on',
    port: 'port to listen on (0: any free one)',
    threads: 'engine threads; 0: one per logical CPU',
    'call-time-limit': 'seconds of running time one call may take (its own slices, not its waits)',
    'log-level': 'pino level of the request log on stderr',
  },
  integers: ['port', 'threads'],
  choices: { ...TARGET_FLAG_CHOICES, 'log-level': ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] },
  check: (flags) => (flags['call-time-limit'] > 0 ? [] : ['--call-time-limit must be a positive number of seconds']),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const { app, url, target } = await startService({
    ...(await fetchedLocation(flags)),
    outputDir: flags['output-dir'],
    host: flags.host,
    port: flags.port,
    device: deviceFromFlags(flags),
    precision: precisionFromFlags(flags),
    threads: flags.threads || undefined,
    callTimeLimitSeconds: flags['call-time-limit'],
    logLevel: flags['log-level'],
    args: flags,
  });
  process.stdout.write(
    JSON.stringify({
      url,
      model: target.modelId,
      revision: target.checkpoint.revision,
      output_dir: flags['output-dir'],
    }) + '\n',
  );
  const stop = async () => {
    await app.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
