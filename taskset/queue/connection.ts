// Where the queue of attempts lives: one Redis, named by `--queue redis://[USER@]HOST:PORT/DB` (or `rediss://` for
// TLS, with --queue-tls-ca/-cert/-key files), its password read from the environment variable
// `--queue-password-env` names, so it is never on a command line or in a job; a USER is an ACL user. Every queue
// command and worker opens its connections through here. Only a worker waits out a Redis that goes away; every other
// command gives up after a bounded time with one line.
import { readFileSync } from 'node:fs';
import { Redis, type RedisOptions } from 'ioredis';

/** The BullMQ queue every pilot command uses (the Redis database in the URL keeps pilots apart). */
export const QUEUE_NAME = 'iwibench-attempts';

export type QueueFlags = {
  queue: string;
  'queue-password-env'?: string;
  'queue-tls-ca'?: string;
  'queue-tls-cert'?: string;
  'queue-tls-key'?: string;
};

/** The connection options of `--queue URL` (and the password, from the variable `--queue-password-env` names). */
export function queueConnection(flags: QueueFlags, env: NodeJS.ProcessEnv = process.env): RedisOptions {
  let url: URL;
  try {
    url = new URL(flags.queue);
  } catch {
    throw new Error(`--queue must be a URL redis://HOST:PORT/DB or rediss://HOST:PORT/DB, got "${flags.queue}"`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new Error(`--queue must start with redis:// or rediss:// (TLS), got "${flags.queue}"`);
  if (url.password)
    throw new Error(
      '--queue carries a password: put it in an environment variable and name it with --queue-password-env',
    );
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new Error(`--queue's database must be a number, got "${url.pathname}"`);
  const variable = flags['queue-password-env'];
  const password = variable === undefined ? undefined : env[variable];
  if (variable !== undefined && !password) throw new Error(`--queue-password-env: $${variable} is not set`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const files = { ca: flags['queue-tls-ca'], cert: flags['queue-tls-cert'], key: flags['queue-tls-key'] };
  const given = Object.entries(files).filter(([, file]) => file !== undefined);
  if (given.length > 0 && url.protocol !== 'rediss:')
    throw new Error(`--queue-tls-${given[0]![0]} needs a rediss:// queue URL (TLS), got "${flags.queue}"`);
  if ((files.cert === undefined) !== (files.key === undefined))
    throw new Error('--queue-tls-cert and --queue-tls-key go together (a client certificate and its key)');
  const read = (flag: string, file: string) => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new Error(`--queue-tls-${flag}: cannot read ${file} (${(error as Error).message})`);
    }
  };
  const tls = Object.fromEntries(given.map(([flag, file]) => [flag, read(flag, file!)]));
  return {
    host,
    port: url.port ? Number(url.port) : 6379,
    db,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(password ? { password } : {}),
    ...(url.protocol === 'rediss:' ? { tls: { servername: host, ...tls } } : {}),
    // BullMQ's workers wait out a Redis restart instead of failing their commands.
    maxRetriesPerRequest: null,
  };
}

/** A command's connection (not a worker's): each command and each connection attempt ends within `ms`. */
export function boundedConnection(connection: RedisOptions, ms: number): RedisOptions {
  return {
    ...connection,
    connectTimeout: ms,
    commandTimeout: ms,
    maxRetriesPerRequest: 1,
    retryStrategy: (times) => (times > 3 ? null : 200),
  };
}

/** What the queue's Redis must be: reachable, and never evicting keys (an evicted job or lock is a lost attempt). */
export async function checkQueue(connection: RedisOptions, url: string, timeoutMs = 10_000): Promise<void> {
  const probe = new Redis({
    ...connection,
    lazyConnect: true,
    enableReadyCheck: false, // its INFO would wait once more; the one below is bounded
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let cause: Error | undefined; // the server's own refusal (WRONGPASS, a TLS error) comes as an event
  probe.on('error', (error: Error) => (cause ??= error)); // reported below, once
  let policy: string | undefined;
  try {
    policy = await withinBound(url, timeoutMs, async () => {
      await probe.connect();
      return /^maxmemory_policy:(\S+)/m.exec(await probe.info('memory'))?.[1];
    });
  } catch (error) {
    throw new Error(
      `no Redis answers at ${url} (${(cause ?? (error as Error)).message}); start one (docs/running.md: "Pilots on a queue")`,
    );
  } finally {
    probe.disconnect();
  }
  if (policy !== 'noeviction')
    throw new Error(
      `the Redis at ${url} has maxmemory-policy ${policy ?? '(unknown)'}: it may evict the queue's jobs and locks; set "maxmemory-policy noeviction" in its config file (or: redis-cli CONFIG SET maxmemory-policy noeviction)`,
    );
}

/**
 * A command's work against the queue, given up after `ms` with one line if Redis stops answering (a queue's
 * connections would otherwise wait for it forever).
 */
export async function withinBound<T>(url: string, ms: number, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the Redis at ${url} did not answer within ${Math.round(ms / 1000)} s; gave up`)),
      ms,
    );
  });
  try {
    return await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}
