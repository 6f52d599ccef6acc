// One process that runs `npx iwibench` command lines one after another, each as bin/iwibench.js runs one (scripts/cli.ts
// `run`), for a test that runs many short commands: their modules load once, where each process of its own would spend
// seconds loading them (and building a tokenizer: ~2.7 s). A command's stdout, stderr and exit code are its own;
// requests and answers go over the IPC channel. `startCliHost` starts one (with tsx's loader, as bin/iwibench.js
// registers it). Where the process itself is the subject (a signal, an exit, `npx`), a test runs bin/iwibench.js.
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** tsx's loader by path (the host runs in the test's folder, which has no node_modules). */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm')).href;

export type CliRun = { code: number; stdout: string; stderr: string };
type Request = { id: number; argv: string[] };

if (process.send && process.argv[2] === 'host') {
  const { run } = await import('../scripts/cli.ts');
  let chain = Promise.resolve();
  process.on('message', (request: Request) => {
    chain = chain.then(async () => {
      let stdout = '';
      let stderr = '';
      const [out, err] = [process.stdout.write, process.stderr.write];
      process.stdout.write = ((chunk: string | Uint8Array) => ((stdout += chunk), true)) as typeof out;
      process.stderr.write = ((chunk: string | Uint8Array) => ((stderr += chunk), true)) as typeof err;
      process.exitCode = undefined;
      try {
        await run(request.argv);
      } finally {
        process.stdout.write = out;
        process.stderr.write = err;
      }
      const code = Number(process.exitCode ?? 0);
      process.exitCode = undefined;
      process.send!({ id: request.id, code, stdout, stderr });
    });
  });
  process.send({ ready: true });
}

export type CliHost = {
  run: (argv: string[]) => Promise<CliRun>;
  /** `run`, rejecting with the command's exit code and stderr if it fails (as a child process would). */
  ok: (argv: string[]) => Promise<CliRun>;
  stop: () => void;
};

/** A command host in `cwd`, with `env` (default: this process's) for every command it runs. */
export async function startCliHost(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<CliHost> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['host'], {
    cwd,
    env,
    execArgv: ['--import', TSX_LOADER],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, (run: CliRun) => void>();
  let next = 0;
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`the command host exited with ${code}`)));
  });
  child.on('message', (answer: CliRun & { id: number }) => {
    pending.get(answer.id)?.({ code: answer.code, stdout: answer.stdout, stderr: answer.stderr });
    pending.delete(answer.id);
  });
  const run = (argv: string[]) =>
    new Promise<CliRun>((resolve) => {
      const id = next++;
      pending.set(id, resolve);
      child.send({ id, argv } satisfies Request);
    });
  const ok = async (argv: string[]) => {
    const result = await run(argv);
    if (result.code !== 0)
      throw Object.assign(new Error(`${argv[0]} exited with ${result.code}: ${result.stderr}`), result);
    return result;
  };
  return { run, ok, stop: () => void child.kill() };
}
