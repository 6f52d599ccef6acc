// npx iwibench pilot <command> [flags]: a pilot's attempts on a queue (BullMQ on Redis), run by workers on one or
// several machines, one per service; `run-pilot` stays the one-machine command.
import { loadSubcommand } from './args.ts';

const subcommands: Record<string, () => Promise<{ main: (argv: string[]) => Promise<void> }>> = {
  enqueue: () => import('./pilot/enqueue.ts'),
  worker: () => import('./pilot/worker.ts'),
  status: () => import('./pilot/status.ts'),
  retry: () => import('./pilot/retry.ts'),
  clean: () => import('./pilot/clean.ts'),
  pause: () => import('./pilot/pause.ts'),
  resume: () => import('./pilot/resume.ts'),
  dashboard: () => import('./pilot/dashboard.ts'),
};

const USAGE = `usage: npx iwibench pilot <${Object.keys(subcommands).join('|')}> [flags]   (npx iwibench pilot <name> --help: its flags)

  enqueue    one job per (episode, editor, repeat) of a calibration; enqueuing again adds nothing
  worker     runs the queue's attempts against one service (one worker per service / GPU)
  status     attempts per family and editor, running jobs (where, phase), failures' reasons
  retry      failed jobs back to waiting (--failed, or --id ID …)
  clean      removes done or failed jobs (--done|--failed [--older-than 7d])
  pause      workers take no new jobs; resume: they take them again
  resume     see pause
  dashboard  bull-board on 127.0.0.1: the queue's jobs, live, each finished one linked to its attempt page

example:
  npx iwibench pilot enqueue runs/calibration.json --queue redis://127.0.0.1:6379/0 --model google/gemma-3-4b-it --editor-model gpt-6.1-terra`;

export async function main(argv: string[]): Promise<void> {
  const { rest, module } = await loadSubcommand(argv, subcommands, USAGE, 'pilot command');
  await module.main(rest);
}
