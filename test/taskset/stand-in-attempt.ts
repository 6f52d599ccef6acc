// The queue tests' stand-in for the pilot's attempt (no service, no target), steered through a control folder: each try
// appends "<job id> <try folder>" to CONTROL/executions.log as it starts (the executions, counted), writes its
// transcript (trace.jsonl, naming its try folder) turn by turn until CONTROL/release exists, then editor.json and
// attempt.json. It honours the lease's signal and checks the lock before it finishes, as the pilot's attempt does.
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeJsonAtomic } from '../../core/files.ts';
import type { AttemptStatus } from '../../taskset/attempt-folder.ts';
import type { WorkerOptions } from '../../taskset/queue/worker.ts';

export function standInAttempt(control: string): WorkerOptions['run'] {
  return async (job, dir, { signal, check }) => {
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
  };
}
