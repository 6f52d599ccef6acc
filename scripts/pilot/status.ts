// npx iwibench pilot status --queue redis://HOST:PORT/DB [--watch] [--json]
// Waiting, active, done and failed attempts per family and editor, each failure's reason, a progress bar, each
// running job's worker, start and phase, each job waiting to retry with its last error, and a paused queue as paused.
import { setTimeout as sleep } from 'node:timers/promises';
import { queueStatus, statusText } from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { onQueue, QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

const defaults = { ...QUEUE_FLAG_DEFAULTS, watch: false, 'interval-seconds': 5, json: false };

export const command = defineCommand({
  usage: 'pilot status',
  description:
    "The queue's attempts per family and editor: waiting, active (where, since when, doing what), done, failed (with each reason).",
  examples: ['npx iwibench pilot status --queue redis://127.0.0.1:6379/0 --watch'],
  defaults,
  help: {
    ...QUEUE_FLAG_HELP,
    watch: 'print again every --interval-seconds until nothing waits or runs',
    'interval-seconds': 'the wait between prints with --watch',
    json: 'print the counts, failures and running jobs as JSON',
  },
  required: ['queue'],
  numbers: ['interval-seconds', 'queue-timeout-seconds'],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  for (;;) {
    const status = await onQueue(flags, queueStatus);
    process.stdout.write(
      (flags.json ? JSON.stringify(status) : `${new Date().toISOString()}\n${statusText(status)}`) + '\n',
    );
    if (!flags.watch || status.counts.waiting + status.counts.active === 0) return;
    await sleep(flags['interval-seconds'] * 1000);
  }
}
