// npx iwibench pilot worker --queue redis://HOST:PORT/DB --service-env FILE --output-dir DIR [--concurrency N]
// Runs the queue's attempts against one service, each exactly as run-pilot runs it (taskset/pilot.ts's
// runPilotAttempt), into OUT/attempts/<id> (written whole, then renamed). The service's tokens and the editor's key
// stay in this process's environment and files; jobs carry neither.
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Evaluator } from '../../taskset/evaluation.ts';
import { resolveEditorConfig } from '../../taskset/harness/index.ts';
import { runPilotAttempt, type PilotAttemptContext } from '../../taskset/pilot.ts';
import { checkQueue, QUEUE_NAME, queueConnection } from '../../taskset/queue/connection.ts';
import { throwIfTransientEditorError } from '../../taskset/queue/failures.ts';
import type { AttemptJob } from '../../taskset/queue/job.ts';
import { unfinishedJobs } from '../../taskset/queue/status.ts';
import { startWorker } from '../../taskset/queue/worker.ts';
import { Taskset } from '../../taskset/taskset.ts';
import { defineCommand, parseCommand } from '../args.ts';
import {
  SERVICE_ENV_HELP,
  TARGET_FLAG_CHOICES,
  TARGET_FLAG_DEFAULTS,
  TARGET_FLAG_HELP,
  deviceFromFlags,
  serviceAndTarget,
} from '../target-flags.ts';
import { QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

const defaults = {
  ...QUEUE_FLAG_DEFAULTS,
  'service-env': undefined as string | undefined,
  ...TARGET_FLAG_DEFAULTS,
  'output-dir': 'runs/pilot',
  concurrency: 1,
  'lock-seconds': 30,
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
    ...QUEUE_FLAG_HELP,
    'service-env': SERVICE_ENV_HELP,
    ...TARGET_FLAG_HELP,
    'output-dir': 'attempts/<family>-s<seed>-<editor>-a<k>/ (a folder shared by the workers, or merged by report)',
    concurrency: 'attempts at once against the one service',
    'lock-seconds': "a job's lock, renewed while it runs; a dead worker's job is taken up again after it lapses",
    'exit-when-done': 'stop once nothing waits or runs on the queue (else: run until SIGINT/SIGTERM)',
  },
  required: ['queue'],
  integers: ['concurrency', 'lock-seconds'],
  choices: TARGET_FLAG_CHOICES,
  check: (flags) => [
    ...(flags.concurrency < 1 ? ['--concurrency must be at least 1'] : []),
    ...(flags['lock-seconds'] < 1 ? ['--lock-seconds must be at least 1'] : []),
  ],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const connection = queueConnection(flags);
  await checkQueue(connection, flags.queue);
  const outputDir = flags['output-dir'];
  const { target, service, stop } = await serviceAndTarget(flags['service-env'], flags, outputDir);
  const evaluator = Evaluator.open({
    location: target.location,
    device: deviceFromFlags(flags),
    pristineCacheDir: path.join(outputDir, 'pristine-cache'),
  });
  const taskset = new Taskset({ tokenizer: target.tokenizer });
  const { 'queue-password-env': _password, ...recorded } = flags;
  const context = (job: AttemptJob): PilotAttemptContext => ({
    service,
    evaluator,
    taskset,
    editor: resolveEditorConfig({
      model: job.editor.model,
      baseUrl: job.editor.base_url,
      api: job.editor.api,
      reasoningEffort: job.editor.reasoning_effort,
    }),
    editorLabel: job.editor.label,
    itemsPerKind: job.items_per_kind || undefined,
    args: { command: 'pilot worker', calibration: job.calibration, 'editor-model': job.editor.model, ...recorded },
  });
  const worker = startWorker({
    connection,
    outputDir,
    concurrency: flags.concurrency,
    lockMs: flags['lock-seconds'] * 1000,
    run: (job, dir) => runPilotAttempt(context(job), job, dir, throwIfTransientEditorError),
    onDone: ({ id, result }) =>
      process.stderr.write(
        `worker ${id}: ${result.status === 'failed' ? `FAILED ${result.error}` : `reward ${result.reward.toFixed(3)}`}\n`,
      ),
  });
  worker.on('failed', (job, error) => process.stderr.write(`worker ${job?.id}: ${error.message}\n`));
  process.stdout.write(JSON.stringify({ worker: process.pid, queue: flags.queue, service: service.url }) + '\n');
  const stopped = new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
  });
  const queue = new Queue(QUEUE_NAME, { connection });
  try {
    if (flags['exit-when-done']) {
      const done = (async () => {
        while ((await unfinishedJobs(queue)) > 0) await sleep(1000);
      })();
      await Promise.race([done, stopped]);
    } else await stopped;
  } finally {
    await worker.close(); // waits for the attempts under way
    await queue.close();
    await stop();
  }
}
