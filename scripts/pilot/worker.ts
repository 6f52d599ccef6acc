// npx iwibench pilot worker --queue redis://HOST:PORT/DB --service-env FILE --output-dir DIR [--concurrency N]
// Runs the queue's attempts of its service's arithmetic (--precision and --device, checked against the service's
// /health; jobs of another arithmetic are left to workers that compute it) against one service, each exactly as
// run-pilot runs it (taskset/pilot.ts's runPilotAttempt), into OUT/attempts/<id> (written whole in a try folder,
// fenced, then renamed). The service's tokens and the editor's key stay in this process's environment and files; jobs
// carry neither. SIGTERM (or SIGINT): no more jobs, the running ones get --grace-seconds, then go back to waiting, and
// the process ends within --grace-seconds + 2 × --lock-seconds + 6 s, Redis or not; a second signal exits at once.
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { Queue } from 'bullmq';
import {
  checkQueue,
  editorForSettings,
  Evaluator,
  MAX_TIMER_MS,
  parseDuration,
  queueConnection,
  runPilotAttempt,
  runUntilSignal,
  startWorker,
  Taskset,
  throwIfTransientEditorError,
  unfinishedJobs,
  type AttemptJob,
  type PilotAttemptContext,
} from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import {
  SERVICE_ENV_HELP,
  TARGET_FLAG_CHOICES,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  deviceFromFlags,
  precisionFromFlags,
  serviceAndTarget,
} from '../target-flags.ts';
import { QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';
import { MAX_LEASE_SECONDS } from '../../service/api/index.ts';

const { 'queue-timeout-seconds': _timeout, ...queueDefaults } = QUEUE_FLAG_DEFAULTS;
const { 'queue-timeout-seconds': _timeoutHelp, ...queueHelp } = QUEUE_FLAG_HELP;

const defaults = {
  ...queueDefaults,
  'service-env': undefined as string | undefined,
  ...TARGET_FLAG_DEFAULTS,
  'output-dir': 'runs/pilot',
  concurrency: 1,
  'lock-seconds': 30,
  'episode-lease-seconds': 0, // 0: four locks, at least a minute
  'attempt-timeout': '6h',
  'grace-seconds': 60,
  'exit-when-done': false,
};

export const command = defineCommand({
  usage: 'pilot worker',
  description:
    "Runs the queue's attempts against one service (one worker per service, one service per GPU), each exactly as run-pilot runs it.",
  examples: [
    'npx iwibench pilot worker --queue redis://127.0.0.1:6379/0 --service-env runs/service-gpu0.env --output-dir runs/pilot --concurrency 2',
  ],
  defaults,
  help: {
    ...queueHelp,
    'service-env': SERVICE_ENV_HELP,
    ...TARGET_FLAG_HELP,
    precision: `its service's (checked against its /health); it takes the jobs of this precision and --device only: ${TARGET_FLAG_HELP.precision}`,
    'output-dir':
      'attempts/<family>-s<seed>-<editor>-a<k>-h<hash>/ (a folder shared by the workers, or merged by report)',
    concurrency: 'attempts at once against the one service',
    'lock-seconds':
      "a job's lock, renewed while it runs; a worker that cannot renew it abandons the try, and a dead worker's job is taken up again after it lapses",
    'episode-lease-seconds':
      "each try's episode on the service is leased for this long and renewed while the try runs, so that a killed worker's episode is deleted once it runs out (at least twice --lock-seconds); 0: four --lock-seconds, at least 60",
    'attempt-timeout': 'an attempt running longer fails with that reason, as a transient failure (retried): 90m, 6h, …',
    'grace-seconds':
      'on SIGTERM: how long running attempts may finish before they are aborted and their jobs requeued (the process ends within this + 2 × --lock-seconds + 6 s)',
    'exit-when-done': 'stop once nothing waits or runs on the queue (else: run until SIGINT/SIGTERM)',
  },
  required: ['queue'],
  integers: ['concurrency', 'lock-seconds', 'episode-lease-seconds'],
  numbers: ['grace-seconds'],
  choices: TARGET_FLAG_CHOICES,
  check: (flags) => [
    ...(flags.concurrency < 1 ? ['--concurrency must be at least 1'] : []),
    ...(flags['lock-seconds'] < 1 || flags['lock-seconds'] * 1000 > MAX_TIMER_MS
      ? [`--lock-seconds must be 1…${Math.floor(MAX_TIMER_MS / 1000)} (Node's timer limit)`]
      : []),
    ...(flags['episode-lease-seconds'] < 0 || flags['episode-lease-seconds'] > MAX_LEASE_SECONDS
      ? [`--episode-lease-seconds must be 0 (the default) or 1…${MAX_LEASE_SECONDS}`]
      : []),
    ...(flags['episode-lease-seconds'] > 0 && flags['episode-lease-seconds'] < 2 * flags['lock-seconds']
      ? [
          `--episode-lease-seconds (${flags['episode-lease-seconds']}) must be at least twice --lock-seconds (${flags['lock-seconds']}): a try that stalls long enough to lose its episode must have lost its job first`,
        ]
      : []),
    ...(flags['grace-seconds'] < 0 || flags['grace-seconds'] * 1000 > MAX_TIMER_MS
      ? [`--grace-seconds must be 0…${Math.floor(MAX_TIMER_MS / 1000)} (Node's timer limit)`]
      : []),
  ],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const attemptTimeoutMs = parseDuration(flags['attempt-timeout'], '--attempt-timeout');
  const connection = queueConnection(flags);
  await checkQueue(connection, flags.queue);
  const outputDir = flags['output-dir'];
  const { target, service, stop } = await serviceAndTarget(flags['service-env'], flags, outputDir);
  const evaluator = Evaluator.open({
    location: target.location,
    device: deviceFromFlags(flags),
    precision: precisionFromFlags(flags),
    pristineCacheDir: path.join(outputDir, 'pristine-cache'),
  });
  // The jobs this worker runs are those of its service's arithmetic (serviceAndTarget checked its /health's precision
  // and device against these flags): any other job is left to a worker that computes it.
  const here = {
    target: { model: evaluator.model.id, revision: evaluator.model.revision },
    precision: precisionFromFlags(flags),
    device: deviceFromFlags(flags),
  };
  const taskset = new Taskset({ tokenizer: target.tokenizer });
  const { 'queue-password-env': _password, ...recorded } = flags;
  const context = (job: AttemptJob): PilotAttemptContext => ({
    service,
    evaluator,
    taskset,
    editor: editorForSettings(job.settings, here),
    editorLabel: job.editor_label,
    itemsPerKind: job.settings.items_per_kind || undefined,
    args: {
      command: 'pilot worker',
      calibration: job.calibration,
      'editor-model': job.settings.editor.model,
      ...recorded,
    },
  });
  const episodeLeaseSeconds = flags['episode-lease-seconds'] || Math.max(60, 4 * flags['lock-seconds']);
  const running = startWorker({
    connection,
    outputDir,
    concurrency: flags.concurrency,
    lockMs: flags['lock-seconds'] * 1000,
    attemptTimeoutMs,
    precision: here.precision,
    device: here.device,
    accept: (job) => void editorForSettings(job.settings, here),
    run: async (job, dir, { signal, check }) => {
      await check();
      return runPilotAttempt(context(job), job, dir, {
        signal,
        episodeLeaseSeconds,
        beforeEvaluation: async (run) => {
          throwIfTransientEditorError(run);
          await check();
        },
      });
    },
    onDone: ({ id, result }) =>
      process.stderr.write(
        `worker ${id}: ${result.status === 'failed' ? `FAILED ${result.error}` : `reward ${result.reward.toFixed(3)}`}\n`,
      ),
  });
  running.worker.on('failed', (job, error) => process.stderr.write(`worker ${job?.id}: ${error.message}\n`));
  process.stdout.write(
    JSON.stringify({ worker: process.pid, queue: flags.queue, lane: running.lane, service: service.url }) + '\n',
  );
  const queue = new Queue(running.lane, { connection });
  queue.on('error', () => {}); // the worker reports Redis's errors
  const done = flags['exit-when-done']
    ? (async () => {
        while ((await unfinishedJobs(queue)) > 0) await sleep(1000);
      })()
    : undefined;
  try {
    await runUntilSignal(running, flags['grace-seconds'] * 1000, done);
  } finally {
    // Bounded like the worker's own calls: with Redis gone, the handle is dropped.
    await Promise.race([queue.close(), sleep(flags['lock-seconds'] * 1000, undefined, { ref: false })]);
    await queue.disconnect();
    await stop();
  }
}
