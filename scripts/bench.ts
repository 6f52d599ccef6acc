// npx iwibench bench engine|episode|weights|service|mmlu-pro|toy|kernel|machine|queue [flags]: each prints JSON figures measured against a reference
// taken in the same run (memory bandwidth, MatMul peak, a plain copy, a bare route).
import { HelpRequested, loadSubcommand } from './args.ts';

const benches: Record<string, () => Promise<{ main: (argv: string[]) => Promise<void> }>> = {
  engine: () => import('./bench/engine.ts'),
  episode: () => import('./bench/episode.ts'),
  toy: () => import('./bench/toy.ts'),
  'mmlu-pro': () => import('./bench/mmlu-pro.ts'),
  service: () => import('./bench/service.ts'),
  weights: () => import('./bench/weights.ts'),
  kernel: () => import('./bench/kernel.ts'),
  machine: () => import('./bench/machine.ts'),
  queue: () => import('./bench/queue.ts'),
};

const USAGE = `usage: npx iwibench bench <${Object.keys(benches).join('|')}> [flags]   (npx iwibench bench <name> --help: its flags)

example:
  npx iwibench bench service --preset tiny`;

export async function main(argv: string[]): Promise<void> {
  const { name, rest, module } = await loadSubcommand(argv, benches, USAGE, 'benchmark');
  try {
    await module.main(rest);
  } catch (error) {
    // The benchmarks declare flags and defaults only (parseFlags): their help names them here.
    if (error instanceof HelpRequested)
      throw new HelpRequested(error.text.replace('npx iwibench <command>', `npx iwibench bench ${name}`));
    throw error;
  }
}
