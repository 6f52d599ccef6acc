// npx iwibench pilot enqueue CALIBRATION --queue redis://HOST:PORT/DB --model ID|--model-dir DIR --editor-model A …
// One job per (episode, editor, repeat); its id is the attempt's id, readable and ending in the hash of what else
// decides the result (the editor's settings, items per kind, family version, target, precision, device and the
// arithmetic they give), so enqueuing again adds nothing and says so, and an attempt queued with other settings
// refuses the enqueue, naming the fields that differ. Jobs go on the lane of their arithmetic: only workers whose
// service computes it take them.
import { arithmeticName, Checkpoint, PINNED_REVISIONS } from '../../engine/index.ts';
import {
  attemptJob,
  attemptSettings,
  conflictLine,
  enqueueAttempts,
  readCalibration,
  type AttemptJob,
  type AttemptSettings,
} from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { EDITOR_FLAG_CHOICES, EDITOR_FLAG_HELP, editorLabel } from '../editor-flags.ts';
import {
  deviceFromFlags,
  locationFromFlags,
  precisionFromFlags,
  TARGET_FLAG_CHOICES,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
} from '../target-flags.ts';
import { onQueue, QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

// The target flags but --offline: enqueue fetches nothing (it records the target's id and revision, or reads a folder).
const { offline: _offlineDefault, ...targetDefaults } = TARGET_FLAG_DEFAULTS;
const { offline: _offlineHelp, ...targetHelp } = TARGET_FLAG_HELP;

const defaults = {
  ...QUEUE_FLAG_DEFAULTS,
  ...targetDefaults,
  'editor-model': [] as string[],
  'editor-base-url': undefined as string | undefined,
  api: undefined as string | undefined,
  'reasoning-effort': undefined as string | undefined,
  repeats: 1,
  'items-per-kind': 0,
  retries: 3,
  'backoff-seconds': 30,
  json: false,
};

export const command = defineCommand({
  usage: 'pilot enqueue CALIBRATION',
  description:
    "One job per episode of CALIBRATION, editor and repeat on the queue; a job's id is its attempt's id (with its settings' hash), so enqueuing again adds nothing.",
  examples: [
    'npx iwibench pilot enqueue runs/calibration.json --queue redis://127.0.0.1:6379/0 --model google/gemma-3-4b-it --editor-model gpt-6.1-terra --editor-model gpt-6.1-sol --repeats 2',
  ],
  defaults,
  help: {
    ...QUEUE_FLAG_HELP,
    ...targetHelp,
    model: `the target every worker must serve (its id, and --revision or the pinned one; a worker with another refuses the job): ${TARGET_FLAG_HELP.model}`,
    precision: `the precision every attempt runs in (its service's and its evaluations'; only a worker whose service computes it takes the job): ${TARGET_FLAG_HELP.precision}`,
    device: `the device every attempt runs on (as --precision: only a worker whose service runs on it takes the job): ${TARGET_FLAG_HELP.device}`,
    'editor-model': `one per editor: ${EDITOR_FLAG_HELP['editor-model']}`,
    'editor-base-url': EDITOR_FLAG_HELP['editor-base-url'],
    api: EDITOR_FLAG_HELP.api,
    'reasoning-effort': EDITOR_FLAG_HELP['reasoning-effort'],
    repeats: 'attempts per episode and editor',
    'items-per-kind': '0: whole episodes; N: the first N items of each kind (smoke tests)',
    retries: "tries after the first on a transient failure (the editor API's, an unreachable service, a timeout)",
    'backoff-seconds': 'the wait before the first retry, doubling after each',
    json: 'print the counts as one JSON line (else one line for a person)',
  },
  required: ['queue', 'editor-model'],
  integers: ['repeats', 'items-per-kind', 'retries'],
  numbers: ['backoff-seconds', 'queue-timeout-seconds'],
  choices: { ...EDITOR_FLAG_CHOICES, ...TARGET_FLAG_CHOICES },
  positionals: { names: 'CALIBRATION', min: 1, max: 1 },
  check: (flags) => [
    ...(flags.repeats < 1 ? ['--repeats must be at least 1'] : []),
    ...(!flags.model && !flags['model-dir']
      ? ['give the target: --model ID (with --revision) or --model-dir DIR']
      : []),
  ],
});

/** The target's id and revision: a checkpoint folder's own, else the id with --revision or its pinned revision. */
function targetOf(flags: typeof defaults): AttemptSettings['target'] {
  if (!flags['model-dir'] && flags.model) {
    const revision = flags.revision ?? PINNED_REVISIONS[flags.model];
    if (!revision) throw new Error(`--model ${flags.model} is not pinned: give its --revision`);
    return { model: flags.model, revision };
  }
  const checkpoint = Checkpoint.open(locationFromFlags(flags));
  try {
    return { model: checkpoint.modelId, revision: checkpoint.revision };
  } finally {
    checkpoint.close();
  }
}

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommand(argv, command);
  const calibrationFile = positionals[0]!;
  const calibration = readCalibration(calibrationFile);
  const target = targetOf(flags);
  const jobs: AttemptJob[] = [];
  for (const model of flags['editor-model']) {
    const settings = attemptSettings(
      {
        model,
        baseUrl: flags['editor-base-url'],
        api: flags.api,
        reasoningEffort: flags['reasoning-effort'],
      },
      {
        itemsPerKind: flags['items-per-kind'],
        target,
        precision: precisionFromFlags(flags),
        device: deviceFromFlags(flags),
      },
    );
    for (const episode of calibration.episodes)
      for (let repeat = 0; repeat < flags.repeats; repeat++)
        jobs.push(attemptJob(episode, editorLabel(model), repeat, settings, calibrationFile));
  }
  const outcome = await onQueue(flags, (connection) =>
    enqueueAttempts(connection, jobs, { retries: flags.retries, backoffMs: flags['backoff-seconds'] * 1000 }),
  );
  if (outcome.conflicts.length > 0) throw new Error(conflictLine(outcome.conflicts));
  const counts = {
    queue: flags.queue,
    arithmetic: arithmeticName(precisionFromFlags(flags), deviceFromFlags(flags)),
    attempts: jobs.length,
    added: outcome.added.length,
    already_queued: outcome.alreadyQueued.length,
  };
  if (flags.json) process.stdout.write(JSON.stringify(counts) + '\n');
  else
    process.stdout.write(
      `${counts.added} of ${counts.attempts} attempts added to ${flags.queue} (arithmetic ${counts.arithmetic})` +
        (counts.already_queued > 0
          ? `; ${counts.already_queued} already queued (left as they are, nothing added for them)`
          : '') +
        '\n',
    );
}
