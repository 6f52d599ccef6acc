// A TCP proxy in front of a real server (Redis, the service), for the queue's tests: the network failures a worker
// must survive, made on demand. It forwards both ways until told to `split` (nothing passes either way and the sockets
// stay open: no error, no answer, as in a network partition; `splitAt` splits it at the next request that carries a
// marker, that request included), to `heal` (the split connections are reset, as a partition's usually end, and new
// ones pass), or to drop the reply to the next request that carries a marker (it
// reaches the server and runs, its reply never comes back, the connection is cut and new ones are refused for
// `holdMs`): what a reply lost to the network looks like to ioredis, which sends the command again once it reconnects.
import { createServer, Socket, type Server } from 'node:net';

export type TcpProxy = {
  port: number;
  /** A redis:// URL through it (database `db`). */
  url: (db?: number) => string;
  split: () => void;
  /** Resolves once a request carrying `marker` has split the network (that request never arrives). */
  splitAt: (marker: string) => Promise<void>;
  heal: () => void;
  /** Resolves once a request carrying `marker` has been forwarded and its reply dropped. */
  dropReplyTo: (marker: string, holdMs: number) => Promise<void>;
  close: () => Promise<void>;
};

type Pair = { client: Socket; upstream: Socket; muted: boolean };

export async function startTcpProxy(serverPort: number): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let split = false;
  let refuseUntil = 0;
  let drop: { marker: Buffer; holdMs: number; done: () => void } | undefined;
  let splitMark: { marker: Buffer; done: () => void } | undefined;
  const cut = (pair: Pair) => {
    pair.client.destroy();
    pair.upstream.destroy();
    pairs.delete(pair);
  };
  let closed = false;
  const server: Server = createServer((client) => {
    if (closed || Date.now() < refuseUntil) {
      client.destroy();
      return;
    }
    const upstream = new Socket();
    const pair: Pair = { client, upstream, muted: false };
    pairs.add(pair);
    upstream.connect(serverPort, '127.0.0.1');
    client.on('data', (chunk: Buffer) => {
      if (splitMark && chunk.includes(splitMark.marker)) {
        split = true;
        splitMark.done();
        splitMark = undefined;
      }
      if (split || pair.muted) return;
      if (drop && chunk.includes(drop.marker)) {
        const { holdMs, done } = drop;
        drop = undefined;
        pair.muted = true; // the reply goes nowhere
        refuseUntil = Date.now() + holdMs;
        upstream.write(chunk);
        setTimeout(() => {
          for (const p of [...pairs]) cut(p); // every connection of the worker: it reconnects after the hold
          done();
        }, 100);
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!split && !pair.muted) client.write(chunk);
    });
    for (const socket of [client, upstream]) {
      socket.on('error', () => cut(pair));
      socket.on('close', () => cut(pair));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    url: (db = 0) => `redis://127.0.0.1:${port}/${db}`,
    split: () => void (split = true),
    splitAt: (marker) => new Promise<void>((done) => (splitMark = { marker: Buffer.from(marker), done })),
    heal: () => {
      split = false;
      for (const pair of [...pairs]) cut(pair);
    },
    dropReplyTo: (marker, holdMs) =>
      new Promise<void>((done) => (drop = { marker: Buffer.from(marker), holdMs, done })),
    close: async () => {
      closed = true; // a connection accepted from now on is cut at once
      const done = new Promise((resolve) => server.close(resolve));
      for (const pair of [...pairs]) cut(pair);
      await done;
    },
  };
}
