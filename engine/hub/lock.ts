// One fetcher per blob on this machine: two commands started together on a fresh machine (a service per GPU) would
// otherwise append to one partial file. The lock is an abstract Unix socket named after the blob's path, bound while
// the blob is fetched: the kernel frees it when its process ends, however it ends, so no lock is ever left stale
// (Node has no flock, and huggingface_hub's .lock files need one). Linux only; elsewhere no lock is taken, and two
// fetchers at once end in a failed checksum, not a bad blob. Abstract sockets are per network namespace: containers
// with their own network that share one cache folder are not kept apart.
import { createHash } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const POLL_MS = 500;

function bind(name: string): Promise<net.Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(undefined) : reject(error),
    );
    server.listen(name, () => resolve(server.unref()));
  });
}

/** Runs `fn` holding the blob's lock; `onWait` is called once if another process holds it first. */
export async function withBlobLock<T>(blob: string, onWait: () => void, fn: () => Promise<T>): Promise<T> {
  if (process.platform !== 'linux') return fn();
  const name = `\0iwibench-hub-${createHash('sha256').update(path.resolve(blob)).digest('hex').slice(0, 40)}`;
  let server: net.Server | undefined;
  for (let waited = false; !(server = await bind(name)); waited = true) {
    if (!waited) onWait();
    await sleep(POLL_MS);
  }
  try {
    return await fn();
  } finally {
    server.close();
  }
}
