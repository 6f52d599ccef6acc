// The fresh evaluation process, started by evaluateInFreshProcess (evaluate.ts) and by nothing else:
// `node --import tsx/esm service/evaluate-worker.ts --job FILE --out FILE --runner PID`. It reads the job (items as
// ids: its runner tokenizes them and decodes the outputs, so this process builds no tokenizer), generates every item
// on one weight set, and writes the output ids (with the applied patch's id and stats) to the out file. Progress goes
// to the parent over the IPC channel (evaluation-progress.ts); a failure is one line on stderr and exit code 1. It
// ends itself within half a second of its runner's end: nobody would read its outputs, and a resumed run waits for
// it before clearing the folder (otherwise it would go on until its next progress report met the closed channel).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { evaluateTokens, type TokenJob } from './evaluate.ts';
import { forwardProgressToParent } from './evaluation-progress.ts';
import { writeJsonAtomic } from '../core/files.ts';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { job: { type: 'string' }, out: { type: 'string' }, runner: { type: 'string' } },
  });
  if (!values.job || !values.out || !values.runner)
    throw new Error('usage: evaluate-worker.ts --job FILE --out FILE --runner PID');
  // The runner's pid, not the parent's at start-up: the runner may be gone before this line runs.
  const runner = Number(values.runner);
  setInterval(() => process.ppid !== runner && process.kill(process.pid, 'SIGTERM'), 500).unref();
  forwardProgressToParent();
  const job = JSON.parse(readFileSync(values.job, 'utf8')) as TokenJob;
  const run = await evaluateTokens(job.location, job.items, {
    patch: job.patch ?? undefined,
    device: job.device,
    precision: job.precision,
    batch: job.batch,
  });
  writeJsonAtomic(values.out, run);
}

try {
  await main();
} catch (error) {
  process.stderr.write(`iwibench evaluation process: ${error instanceof Error ? error.message : String(error)}\n`);
  if (process.env.IWIBENCH_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.exitCode = 1;
}
