// npx iwibench pilot clean --queue URL --done|--failed [--older-than D]
// Removes finished jobs from the queue (their attempt folders stay where the workers wrote them).
import { cleanFinished, parseDuration } from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { onQueue, QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

const defaults = {
  ...QUEUE_FLAG_DEFAULTS,
  done: false,
  failed: false,
  'older-than': undefined as string | undefined,
  json: false,
};

export const command = defineCommand({
  usage: 'pilot clean',
  description: 'Removes done or failed jobs from the queue (attempt folders stay); with --older-than, only older ones.',
  examples: ['npx iwibench pilot clean --queue redis://127.0.0.1:6379/0 --done --older-than 7d'],
  defaults,
  help: {
    ...QUEUE_FLAG_HELP,
    done: 'remove completed jobs',
    failed: 'remove jobs failed for good',
    'older-than': 'only jobs finished longer ago than this: 90m, 12h, 7d, … (default: every one)',
    json: 'print the ids removed as JSON',
  },
  required: ['queue'],
  numbers: ['queue-timeout-seconds'],
  check: (flags) => (flags.done === flags.failed ? ['give --done or --failed (one of them)'] : []),
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  // A date compared, not a timer: any length will do.
  const olderThanMs =
    flags['older-than'] === undefined ? 0 : parseDuration(flags['older-than'], '--older-than', Infinity);
  const which = flags.done ? 'done' : 'failed';
  const removed = await onQueue(flags, (c) => cleanFinished(c, which, olderThanMs));
  if (flags.json) process.stdout.write(JSON.stringify({ removed }) + '\n');
  else process.stdout.write(`${removed.length} ${which} job(s) removed\n`);
}
