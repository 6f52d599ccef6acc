// npx iwibench bench engine|weights|service|mmlu-pro|toy|kernel [flags]: each prints JSON figures measured against a reference
// taken in the same run (memory bandwidth, MatMul peak, a plain copy, a bare route).
const benches: Record<string, () => Promise<{ main: (argv: string[]) => Promise<void> }>> = {
  engine: () => import('./bench/engine.ts'),
  toy: () => import('./bench/toy.ts'),
  'mmlu-pro': () => import('./bench/mmlu-pro.ts'),
  service: () => import('./bench/service.ts'),
  weights: () => import('./bench/weights.ts'),
  kernel: () => import('./bench/kernel.ts'),
};

export async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  const load = name ? benches[name] : undefined;
  if (!load) throw new Error(`usage: npx iwibench bench <${Object.keys(benches).join('|')}> [flags]`);
  await (await load()).main(rest);
}
