// A throwaway Redis for the queue's tests and `bench queue`: Debian's redis-server on a free port of 127.0.0.1, its
// data in a temp folder, append-only on (so that a restart keeps every acknowledged job), configured by a config
// file as docs/running.md runs one (a password never on its command line). `config` adds lines (requirepass, an ACL
// user, a TLS port and its files). The caller stops it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

export type RedisHandle = {
  url: (db?: number) => string;
  port: number;
  /** A second free port, for `tls-port` lines in `config` (unused otherwise). */
  spare: number;
  /** The server's process id (a test may SIGSTOP it). */
  pid: () => number;
  dir: string;
  /**
   * Stop it (SIGTERM: the append-only file is flushed) and start it again on the same port and data, `downMs` later
   * (a restart that outlasts a lock, say).
   */
  restart: (downMs?: number) => Promise<void>;
  stop: () => Promise<void>;
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startRedis(
  config: (ports: { port: number; spare: number }) => string[] = () => [],
): Promise<RedisHandle> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-redis-'));
  const port = await freePort();
  const spare = await freePort();
  const file = path.join(dir, 'redis.conf');
  const lines = [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'appendonly yes', 'appendfsync always', 'save ""'];
  writeFileSync(file, [...lines, ...config({ port, spare })].join('\n') + '\n', { mode: 0o600 });
  let child: ChildProcess;
  const launch = async () => {
    child = spawn('redis-server', [file], { stdio: 'ignore' });
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${code} (is it installed?)`))),
    );
    exited.catch(() => {});
    for (;;) {
      const probe = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        enableReadyCheck: false,
        retryStrategy: () => null,
      });
      probe.on('error', () => {});
      const ready = await Promise.race([
        probe
          .connect()
          .then(() => probe.ping())
          .then(
            () => true,
            (error: Error) => /NOAUTH/.test(error.message), // it answers: it asks for a password
          ),
        exited,
      ]).finally(() => probe.disconnect());
      if (ready) return;
      await sleep(50);
    }
  };
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  await launch();
  return {
    url: (db = 0) => `redis://127.0.0.1:${port}/${db}`,
    port,
    spare,
    pid: () => child.pid!,
    dir,
    restart: async (downMs = 0) => {
      await stop();
      await sleep(downMs);
      await launch();
    },
    stop,
  };
}
