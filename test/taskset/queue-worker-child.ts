// A queue worker process for the queue's tests, with a stand-in attempt instead of the pilot's (stand-in-attempt.ts:
// no service, no target): node --import tsx queue-worker-child.ts QUEUE_URL OUTPUT_DIR CONTROL_DIR LOCK_MS GRACE_MS
// [AFTER_CLAIM]. AFTER_CLAIM `kill`: the process SIGKILLs itself between its first commit claim and the rename (the
// test hook). SIGTERM/SIGINT stop it as they stop `pilot worker` (runUntilSignal).
import { queueConnection } from '../../taskset/queue/connection.ts';
import { runUntilSignal, startWorker } from '../../taskset/queue/worker.ts';
import { standInAttempt } from './stand-in-attempt.ts';

const [url, outputDir, control, lockMs, graceMs, afterClaim] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string | undefined,
];
const running = startWorker({
  connection: queueConnection({ queue: url }),
  outputDir,
  concurrency: 1,
  lockMs: Number(lockMs),
  run: standInAttempt(control),
  ...(afterClaim === 'kill' ? { afterClaim: () => void process.kill(process.pid, 'SIGKILL') } : {}),
});
await running.worker.waitUntilReady();
process.stdout.write(`ready ${process.pid}\n`);
await runUntilSignal(running, Number(graceMs));
process.stdout.write('stopped\n');
