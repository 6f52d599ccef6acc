// Start `npx iwibench service` as a child process with fresh random tokens, for commands that need a service of
// their own (demo, run-prime and run-pilot without --service-env). Resolves once it listens; `stop()` ends it. The
// commands start the public `service` command, as a user would; the taskset's library code starts no CLI.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseEnv } from 'node:util';
import { ENGINE_PROCESS_FLAGS } from '../engine/index.ts';
import { DEFAULT_SERVICE_URL } from '../service/api/index.ts';
import type { ServiceEnv } from '../taskset/index.ts';

const CLI = fileURLToPath(new URL('../bin/iwibench.js', import.meta.url));

export type ServiceHandle = ServiceEnv & { child: ChildProcess; stop: () => Promise<void> };

type StartOptions = {
  modelDir?: string;
  cacheDir?: string;
  model?: string;
  revision?: string;
  outputDir: string;
  device?: string;
  precision?: string;
  logLevel?: string;
};

export async function startServiceProcess(options: StartOptions): Promise<ServiceHandle> {
  const adminToken = randomBytes(24).toString('hex');
  const editorToken = randomBytes(24).toString('hex');
  // The revision is one the caller has already accepted (pinned, or allowed explicitly).
  const args = [
    ...ENGINE_PROCESS_FLAGS,
    CLI,
    'service',
    '--output-dir',
    options.outputDir,
    '--port',
    '0',
    '--log-level',
    options.logLevel ?? 'warn',
    '--allow-unpinned-revision',
  ];
  for (const [flag, value] of [
    ['--model-dir', options.modelDir],
    ['--cache-dir', options.cacheDir],
    ['--model', options.model],
    ['--revision', options.revision],
    ['--device', options.device],
    ['--precision', options.precision],
  ] as const) {
    if (value) args.push(flag, value);
  }
  const child = spawn(process.execPath, args, {
    env: { ...process.env, IWIBENCH_ADMIN_TOKEN: adminToken, IWIBENCH_EDITOR_TOKEN: editorToken },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line).url));
    child.once('exit', (code) => reject(new Error(`the service exited with code ${code} before listening`)));
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { url, adminToken, editorToken, child, stop };
}

/**
 * A `--service-env FILE`: IWIBENCH_SERVICE_URL, IWIBENCH_ADMIN_TOKEN, IWIBENCH_EDITOR_TOKEN (dotenv syntax). What
 * the file lacks comes from the environment; the URL defaults to 127.0.0.1:8768.
 */
export function readServiceEnv(file: string, env: NodeJS.ProcessEnv = process.env): ServiceEnv {
  const merged = { ...env, ...parseEnv(readFileSync(file, 'utf8')) };
  const missing = ['IWIBENCH_ADMIN_TOKEN', 'IWIBENCH_EDITOR_TOKEN'].filter((k) => !merged[k]);
  if (missing.length > 0)
    throw new Error(`${file} lacks ${missing.join(', ')} (and the environment does not set them)`);
  return serviceFromEnv(merged)!;
}

/** The service the environment names (both tokens set), at IWIBENCH_SERVICE_URL or 127.0.0.1:8768; else undefined. */
export function serviceFromEnv(env: NodeJS.ProcessEnv = process.env): ServiceEnv | undefined {
  if (!env.IWIBENCH_ADMIN_TOKEN || !env.IWIBENCH_EDITOR_TOKEN) return undefined;
  return {
    url: env.IWIBENCH_SERVICE_URL || DEFAULT_SERVICE_URL,
    adminToken: env.IWIBENCH_ADMIN_TOKEN,
    editorToken: env.IWIBENCH_EDITOR_TOKEN,
  };
}
