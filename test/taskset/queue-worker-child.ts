// A queue worker process for the queue's tests, with a stand-in attempt instead of the pilot's (no service, no
// target): node --import tsx queue-worker-child.ts QUEUE_URL OUTPUT_DIR CONTROL_DIR LOCK_MS GRACE_MS
// Each try appends "<job id> <try folder>" to CONTROL_DIR/executions.log as it starts (the executions, counted), writes
// its transcript (trace.jsonl, naming its try folder) turn by turn until CONTROL_DIR/release exists, then
// attempt.json. It honours the lease's signal and checks the lock before it finishes, as the pilot's attempt does.
// SIGTERM/SIGINT stop it as they stop `pilot worker` (runUntilSignal).
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeJsonAtomic } from '../../core/files.ts';
import type { AttemptStatus } from '../../taskset/attempt.ts';
import { queueConnection } from '../../taskset/queue/connection.ts';
import { runUntilSignal, startWorker } from '../../taskset/queue/worker.ts';

const [url, outputDir, control, lockMs, graceMs] = process.argv.slice(2) as [string, string, string, string, string];
const { worker, stop } = startWorker({
  connection: queueConnection({ queue: url }),
  outputDir,
  concurrency: 1,
  lockMs: Number(lockMs),
  run: async (job, dir, { signal, check }) => {
    const name = path.basename(dir);
    appendFileSync(path.join(control, 'executions.log'), `${job.id} ${name}\n`);
    await check();
    const trace = path.join(dir, 'trace.jsonl');
    for (let turn = 1; ; turn++) {
      signal.throwIfAborted();
      appendFileSync(trace, JSON.stringify({ type: 'request', turn, try: name }) + '\n');
      if (existsSync(path.join(control, 'release'))) break;
      await sleep(100);
    }
    await check();
    const status: AttemptStatus = {
      status: 'complete',
      id: job.id,
      family: job.family,
      seed: job.seed,
      editor: job.editor_label,
      reward: 1,
      stop_reason: 'final_reply',
      finished_at: new Date().toISOString(),
    };
    writeFileSync(path.join(dir, 'editor.json'), JSON.stringify({ try: name }));
    writeJsonAtomic(path.join(dir, 'attempt.json'), status);
    return status;
  },
});
await worker.waitUntilReady();
process.stdout.write(`ready ${process.pid}\n`);
await runUntilSignal(stop, Number(graceMs));
process.stdout.write('stopped\n');
