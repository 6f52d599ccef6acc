// npx iwibench pilot pause --queue URL
import { pauseQueue } from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { onQueue, QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

export const command = defineCommand({
  usage: 'pilot pause',
  description: 'Pauses the queue: workers finish what they run and take no new jobs until pilot resume.',
  examples: ['npx iwibench pilot pause --queue redis://127.0.0.1:6379/0'],
  defaults: QUEUE_FLAG_DEFAULTS,
  help: QUEUE_FLAG_HELP,
  required: ['queue'],
  numbers: ['queue-timeout-seconds'],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  await onQueue(flags, (c) => pauseQueue(c, true));
  process.stdout.write(`${flags.queue}: paused\n`);
}
