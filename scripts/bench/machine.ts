// npx iwibench bench machine: the machine's references as they are now, in a process of their own: the read
// bandwidth with the kernel's widest loads on every thread (best of 20 passes over 256 MiB) and onnxruntime's float32
// MatMul peak ([2048, 2048]², median of 5). `bench engine` runs it right before and right after each figure it
// measures, so that each figure has references from its own minute on a machine whose neighbours come and go.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { kernelInfo } from '../../engine/index.ts';
import { parseFlags } from '../args.ts';
import { benchHeader } from './header.ts';
import { matMulPeak, readLoads, readReference } from './reference.ts';

const defaults = { 'read-repeats': 20, 'matmul-n': 2048 };

/** What `bench machine` prints after the header. */
export type MachineReferences = {
  read_gb_per_s: number;
  read_on_huge_pages: boolean;
  read_loads: string;
  matmul_gflop_per_s: number;
  matmul_n: number;
};

const CLI = fileURLToPath(new URL('../../bin/iwibench.js', import.meta.url));

/** `bench machine` in a child process: the machine's references now, none of their memory in this process. */
export function machineNow(): MachineReferences {
  return JSON.parse(
    execFileSync(process.execPath, [CLI, 'bench', 'machine'], { encoding: 'utf8' }),
  ) as MachineReferences;
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  const read = readReference(flags['read-repeats']);
  const matmul = await matMulPeak(flags['matmul-n']);
  const references: MachineReferences = {
    read_gb_per_s: read.gbPerSecond,
    read_on_huge_pages: read.hugePages,
    read_loads: readLoads(kernelInfo()),
    matmul_gflop_per_s: matmul.gflopPerSecond,
    matmul_n: matmul.n,
  };
  process.stdout.write(`${JSON.stringify({ ...benchHeader('machine', flags), ...references })}\n`);
}
