// `npx iwibench env` on this machine (no GPU, no CUDA libraries): the versions, the kernels' choice as kernelInfo()
// gives it (the addon's status and its instruction set at least, whatever other fields it has), the arithmetic's names,
// what CUDA lacks with the README's install line, the cache with the pinned checkpoints in it (the toy laid out as the
// pinned 1B one), the memory and disk each target needs, and the queue's Redis (a throwaway one; one that is not there).
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUDA_INSTALL, PINNED_REVISIONS, arithmeticName, kernelInfo } from '../../engine/index.ts';
import { flatten } from '../../scripts/env.ts';
import { queueReport } from '../../scripts/env/redis.ts';
import { startRedis, type RedisHandle } from '../../scripts/redis-server.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { addSnapshot } from '../hf-cache.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin', 'iwibench.js');
const ONE_B = 'google/gemma-3-1b-it';

let redis: RedisHandle;
let env: NodeJS.ProcessEnv;
let cacheDir: string;
beforeAll(async () => {
  redis = await startRedis();
  cacheDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-env-')), 'hub');
  addSnapshot(cacheDir, ONE_B, PINNED_REVISIONS[ONE_B]!, TOY_TARGET_DIR);
  env = { ...process.env, HF_HUB_CACHE: cacheDir, HF_TOKEN: 'hf_secret_never_printed', LD_LIBRARY_PATH: '' };
});
afterAll(() => redis.stop());

const run = async (...args: string[]) =>
  (await exec(process.execPath, [CLI, 'env', ...args], { cwd: REPO_ROOT, env })).stdout;

describe('npx iwibench env', () => {
  it('--json: what this machine will run, and the queue; the same for a person', async () => {
    const [json, text] = await Promise.all([run('--json', '--queue', redis.url()), run()]);
    const report = JSON.parse(json);
    expect(report.iwibench.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(report.node.version).toBe(process.version);
    expect(report.dependencies['onnxruntime-node']).toMatch(/^\d/);
    expect(report.dependencies['@huggingface/hub']).toMatch(/^\d/);
    expect(report.cpu.logical_cpus).toBe(os.cpus().length);
    // kernelInfo() as it is: the addon's status, and the instruction set it chose where it loaded.
    expect(typeof report.kernels.native).toBe('boolean');
    if (report.kernels.native) expect(report.kernels.isa).toEqual(kernelInfo().isa);
    expect(report.arithmetic).toEqual({
      bf16: arithmeticName('bf16', 'cpu'),
      float32: arithmeticName('float32', 'cpu'),
    });
    expect(report.onnxruntime.providers).toContain('cpu');
    expect(report.onnxruntime.cuda).toMatchObject({
      driver: null,
      gpus: [],
      probe: null,
      install: CUDA_INSTALL,
      libraries: { 'libcudart.so.12': { found: null }, 'libcudnn.so.9': { found: null } },
      provider: { 'libonnxruntime_providers_cuda.so': null },
    });
    expect(report.onnxruntime.cuda.missing).toEqual(
      expect.arrayContaining(['libonnxruntime_providers_cuda.so', 'libcudart.so.12', 'libcudnn.so.9']),
    );
    expect(report.huggingface).toMatchObject({ cache: cacheDir, token: 'HF_TOKEN' });
    expect(report.huggingface.checkpoints[ONE_B]).toMatchObject({ status: 'complete', bytes: expect.any(Number) });
    expect(report.huggingface.checkpoints['google/gemma-3-4b-it']).toMatchObject({ status: 'absent' });
    expect(report.targets[ONE_B]).toMatchObject({ to_fetch: 0, disk_fits: true });
    const fourB = report.targets['google/gemma-3-4b-it'];
    expect(fourB.weights).toBeGreaterThan(7 * 2 ** 30); // 7.2 GiB of BF16 text weights
    expect(fourB.download).toBeGreaterThan(fourB.weights); // and the vision tower
    expect(fourB.run).toBe(2 * fourB.evaluation_process);
    expect(report.memory.total).toBeGreaterThan(0);
    expect(report.queue).toMatchObject({ reached: true, noeviction: true, appendonly: true, appendfsync: 'always' });
    expect(JSON.stringify(report)).not.toContain('hf_secret_never_printed');
    expect(report.environment.HF_TOKEN).toBe('set');
    // For a person: kernelInfo() field by field, what CUDA lacks and the README's install line.
    expect(text).toMatch(/^iwibench \d+\.\d+\.\d+/);
    const kernels = text.slice(text.indexOf('\nkernels (kernelInfo()):\n'));
    expect(kernels.slice(0, kernels.indexOf('\n\n'))).toContain(`\n  native: ${kernelInfo().native}\n`);
    expect(text).toMatch(/\n {2}CUDA \(--device cuda\): not usable here, missing .*libcudart\.so\.12/);
    expect(text).toContain(`\n  install: ${CUDA_INSTALL}\n`);
    expect(text).toContain(`\n  ${ONE_B} at ${PINNED_REVISIONS[ONE_B]}: complete (`);
    expect(text).toContain(
      '\n  google/gemma-3-4b-it at 093f9f388b31de276ce2de164bdc2081324b9767: absent (npx iwibench download',
    );
    expect(text).toMatch(/\n {2}google\/gemma-3-4b-it: a run \(.*\) ~[\d.]+ GiB: (fits|does not fit);/);
    expect(text).not.toContain('hf_secret_never_printed');
  });

  it('a queue that does not answer is reported, not thrown', async () => {
    const report = await queueReport({
      queue: 'redis://127.0.0.1:1/0',
      'queue-password-env': undefined,
      'queue-tls-ca': undefined,
      'queue-tls-cert': undefined,
      'queue-tls-key': undefined,
      'queue-timeout-seconds': 5,
    });
    expect(report).toMatchObject({ reached: false, error: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('flattens any kernelInfo() shape: nested objects by dotted keys, lists joined', () => {
    expect(
      flatten({
        native: true,
        isa: 'avx512',
        available: ['avx2', 'avx512'],
        paths: { matmul: 'amx', attention: { decode: 'fma' } },
      }),
    ).toEqual([
      'native: true',
      'isa: avx512',
      'available: avx2, avx512',
      'paths.matmul: amx',
      'paths.attention.decode: fma',
    ]);
  });
});
