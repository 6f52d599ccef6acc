// npx iwibench pilot enqueue CALIBRATION --queue redis://HOST:PORT/DB --editor-model A [--editor-model B …] [--repeats K]
// One job per (episode, editor, repeat); its id is the attempt's id, so enqueuing again adds nothing and says so.
import { readCalibration } from '../../taskset/calibration.ts';
import { checkQueue, queueConnection } from '../../taskset/queue/connection.ts';
import { enqueueAttempts } from '../../taskset/queue/enqueue.ts';
import { attemptJob, type AttemptJob } from '../../taskset/queue/job.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { EDITOR_FLAG_CHOICES, EDITOR_FLAG_HELP, editorLabel } from '../editor-flags.ts';
import { QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

const defaults = {
  ...QUEUE_FLAG_DEFAULTS,
  'editor-model': [] as string[],
  'editor-base-url': undefined as string | undefined,
  api: undefined as string | undefined,
  'reasoning-effort': undefined as string | undefined,
  repeats: 1,
  'items-per-kind': 0,
  retries: 3,
  'backoff-seconds': 30,
};

export const command = defineCommand({
  usage: 'pilot enqueue CALIBRATION',
  description:
    "One job per episode of CALIBRATION, editor and repeat on the queue; a job's id is its attempt's id, so enqueuing again adds nothing.",
  examples: [
    'npx iwibench pilot enqueue runs/calibration.json --queue redis://127.0.0.1:6379/0 --editor-model gpt-6.1-terra --editor-model gpt-6.1-sol --repeats 2',
  ],
  defaults,
  help: {
    ...QUEUE_FLAG_HELP,
    'editor-model': `one per editor: ${EDITOR_FLAG_HELP['editor-model']}`,
    'editor-base-url': EDITOR_FLAG_HELP['editor-base-url'],
    api: EDITOR_FLAG_HELP.api,
    'reasoning-effort': EDITOR_FLAG_HELP['reasoning-effort'],
    repeats: 'attempts per episode and editor',
    'items-per-kind': '0: whole episodes; N: the first N items of each kind (smoke tests)',
    retries: "tries after the first on a transient failure (the editor API's, an unreachable service)",
    'backoff-seconds': 'the wait before the first retry, doubling after each',
  },
  required: ['queue', 'editor-model'],
  integers: ['repeats', 'items-per-kind', 'retries'],
  numbers: ['backoff-seconds'],
  choices: EDITOR_FLAG_CHOICES,
  positionals: { names: 'CALIBRATION', min: 1, max: 1 },
  check: (flags) => (flags.repeats < 1 ? ['--repeats must be at least 1'] : []),
});

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommand(argv, command);
  const calibrationFile = positionals[0]!;
  const calibration = readCalibration(calibrationFile);
  const connection = queueConnection(flags);
  await checkQueue(connection, flags.queue);
  const jobs: AttemptJob[] = [];
  for (const model of flags['editor-model']) {
    const editor = {
      model,
      label: editorLabel(model),
      ...(flags['editor-base-url'] ? { base_url: flags['editor-base-url'] } : {}),
      ...(flags.api ? { api: flags.api as AttemptJob['editor']['api'] } : {}),
      ...(flags['reasoning-effort'] ? { reasoning_effort: flags['reasoning-effort'] } : {}),
    };
    for (const episode of calibration.episodes)
      for (let repeat = 0; repeat < flags.repeats; repeat++)
        jobs.push(
          attemptJob(episode, editor, repeat, { calibration: calibrationFile, itemsPerKind: flags['items-per-kind'] }),
        );
  }
  const { added, alreadyQueued } = await enqueueAttempts(connection, jobs, {
    retries: flags.retries,
    backoffMs: flags['backoff-seconds'] * 1000,
  });
  if (alreadyQueued.length > 0)
    process.stderr.write(`${alreadyQueued.length} of ${jobs.length} attempts already queued (left as they are)\n`);
  process.stdout.write(
    JSON.stringify({
      queue: flags.queue,
      attempts: jobs.length,
      added: added.length,
      already_queued: alreadyQueued.length,
    }) + '\n',
  );
}
