// npx iwibench pilot retry --queue URL [--failed] [--id ID …]
// Failed jobs back to waiting, their tries reset: every failed one (--failed: failed for good, or completed with a
// deterministic failure), or those named by --id.
import { retryFailed } from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { onQueue, QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

const defaults = { ...QUEUE_FLAG_DEFAULTS, failed: false, id: [] as string[], json: false };

export const command = defineCommand({
  usage: 'pilot retry',
  description: 'Failed jobs back to waiting (their tries reset): every failed one, or those named.',
  examples: [
    'npx iwibench pilot retry --queue redis://127.0.0.1:6379/0 --failed',
    'npx iwibench pilot retry --queue redis://127.0.0.1:6379/0 --id local_factual_update-s0-gpt-6.1-terra-a0-h1a2b3c4d',
  ],
  defaults,
  help: {
    ...QUEUE_FLAG_HELP,
    failed: 'every failed job (failed for good, or completed with a deterministic failure)',
    id: 'a job to put back (repeatable); it must have failed',
    json: 'print the ids put back as JSON',
  },
  required: ['queue'],
  numbers: ['queue-timeout-seconds'],
  check: (flags) => (flags.failed === flags.id.length > 0 ? ['give --failed, or --id ID (not both)'] : []),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const { retried, notFailed } = await onQueue(flags, (c) => retryFailed(c, flags.failed ? undefined : flags.id));
  if (flags.json) process.stdout.write(JSON.stringify({ retried, not_failed: notFailed }) + '\n');
  else process.stdout.write(`${retried.length} failed job(s) back to waiting\n`);
  if (notFailed.length > 0) throw new Error(`not failed (left as they are): ${notFailed.join(', ')}`);
}
