// `npx iwibench bench machine`, which `bench engine` runs in a child process before and after each figure: the
// references it prints are the machine's, measured with the flags given.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { kernelInfo } from '../../engine/index.ts';
import { readLoads } from '../../scripts/bench/reference.ts';
import { REPO_ROOT } from '../fixtures.ts';

const exec = promisify(execFile);

it('prints the read bandwidth and the MatMul peak as JSON, after the header', async () => {
  const cli = path.join(REPO_ROOT, 'bin', 'iwibench.js');
  const args = ['bench', 'machine', '--read-repeats', '2', '--matmul-n', '128'];
  const { stdout } = await exec(process.execPath, [cli, ...args], { cwd: REPO_ROOT });
  const report = JSON.parse(stdout) as Record<string, unknown>;
  expect(report).toMatchObject({
    bench: 'machine',
    args: { 'read-repeats': 2, 'matmul-n': 128 },
    matmul_n: 128,
    read_loads: readLoads(kernelInfo()),
  });
  // In the units the names say: a CPU reads 0.5–5,000 GB/s and multiplies at 0.5–100,000 GFLOP/s (bytes, MB or
  // TFLOP per second would fall outside by a factor of a thousand or more).
  expect(report.read_gb_per_s).toBeGreaterThan(0.5);
  expect(report.read_gb_per_s).toBeLessThan(5_000);
  expect(report.matmul_gflop_per_s).toBeGreaterThan(0.5);
  expect(report.matmul_gflop_per_s).toBeLessThan(100_000);
  expect(typeof report.read_on_huge_pages).toBe('boolean');
});
