// `npx iwibench <command> [flags]`: one file per command in scripts/, each exporting `main(argv)`.
// The table is explicit so that `npx iwibench help` lists exactly what exists; each command's flags, defaults and
// example are declared in its file and printed by `npx iwibench <command> --help` (scripts/args.ts).
import { HelpRequested, UsageError, nearest } from './args.ts';

type Command = { summary: string; load: () => Promise<{ main: (argv: string[]) => Promise<void> }> };

export const commands: Record<string, Command> = {
  demo: {
    summary: 'the main job end to end on the committed toy target: no GPU, key or download',
    load: () => import('./demo.ts'),
  },
  download: {
    summary: 'fetch a checkpoint into the Hugging Face cache (checked, resumable), without running anything',
    load: () => import('./download.ts'),
  },
  env: {
    summary: 'what a bug report needs and what this machine will run (versions, kernels, CUDA, cache, memory)',
    load: () => import('./env.ts'),
  },
  'make-tiny-checkpoint': {
    summary: 'write a seeded random Gemma 3 checkpoint folder',
    load: () => import('./make-tiny-checkpoint.ts'),
  },
  'make-toy-target': {
    summary: "train the toy target (small Gemma 3 on the taskset's world) into a checkpoint folder",
    load: () => import('./make-toy-target.ts'),
  },
  logits: { summary: 'write float32 logits of every position as .npy', load: () => import('./logits.ts') },
  generate: { summary: 'greedy chat generation from a checkpoint folder', load: () => import('./generate.ts') },
  service: {
    summary: 'start the service (Fastify): episodes, tools, budgets, OpenAI-compatible endpoints',
    load: () => import('./service.ts'),
  },
  'evaluate-patch': {
    summary: 'score a patch: pristine and patched weights, each in a fresh process',
    load: () => import('./evaluate-patch.ts'),
  },
  calibrate: {
    summary: 'select eligible episodes on pristine weights, seeds ascending across the ten families',
    load: () => import('./calibrate.ts'),
  },
  'run-prime': {
    summary: 'one episode with one editor, evaluated in fresh processes',
    load: () => import('./run-prime.ts'),
  },
  'run-pilot': {
    summary: 'the calibrated episodes with one editor; resumable; --workers N',
    load: () => import('./run-pilot.ts'),
  },
  pilot: {
    summary:
      'a pilot on a queue (BullMQ on Redis): enqueue | worker (one per service) | status | retry | clean | pause | resume | dashboard',
    load: () => import('./pilot.ts'),
  },
  'replay-patch': {
    summary: 'replay a submitted patch with a new control seed (new and repeated controls apart)',
    load: () => import('./replay-patch.ts'),
  },
  report: {
    summary: 'results by target and editor: results.csv, summary.csv and a self-contained report.html',
    load: () => import('./report.ts'),
  },
  'report-token-efficiency': {
    summary: 'editor tokens per attempt joined to results.csv; reward per 1,000 editor tokens',
    load: () => import('./report-token-efficiency.ts'),
  },
  bench: {
    summary: 'benchmarks: engine | weights | service | mmlu-pro | toy | kernel | machine | queue',
    load: () => import('./bench.ts'),
  },
  'export-patched': {
    summary: 'write a patched checkpoint folder (and --peft a LoRA adapter) from a patch',
    load: () => import('./export-patched.ts'),
  },
  episode: {
    summary: 'print an episode spec as JSON (--view admin: everything graded; editor: what the editor sees)',
    load: () => import('./episode.ts'),
  },
  check: {
    summary: 'print the verdict of one graded item for a response (behaviour, content, detail)',
    load: () => import('./check.ts'),
  },
  'mmlu-pro': {
    summary: 'MMLU-Pro against an OpenAI-compatible server; `compare A B` for two result folders',
    load: () => import('./mmlu-pro.ts'),
  },
  'editor-proxy': {
    summary: 'transport proxy between the harness and the editor API',
    load: () => import('./editor-proxy.ts'),
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  const rows = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  const usage = [
    'usage: npx iwibench <command> [flags]',
    '       npx iwibench <command> --help   (or: npx iwibench help <command>)',
  ];
  return [...usage, '', 'commands:', ...rows].join('\n');
}

export async function run(argv: string[]): Promise<void> {
  let [name, ...rest] = argv;
  if (name === 'help' && rest.length > 0) [name, rest] = [rest[0], ['--help', ...rest.slice(1)]];
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(usage() + '\n');
    return;
  }
  const command = commands[name];
  if (!command) {
    const near = nearest(name, Object.keys(commands));
    process.stderr.write(
      `iwibench: unknown command "${name}"${near ? ` (did you mean ${near}?)` : ''}\n\n${usage()}\n`,
    );
    process.exitCode = 2;
    return;
  }
  try {
    const module = await command.load();
    await module.main(rest);
  } catch (error) {
    if (error instanceof HelpRequested) {
      process.stdout.write(`iwibench ${name}: ${command.summary}\n\n${error.text}\n`);
      return;
    }
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`iwibench ${name}: ${message}\n`);
    if (process.env.IWIBENCH_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  }
}
