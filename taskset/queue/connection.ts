// Where the queue of attempts lives: one Redis, named by `--queue redis://HOST:PORT/DB` (or `rediss://` for TLS), its
// password read from the environment variable `--queue-password-env` names, so it is never on a command line or in
// a job. Every queue command and worker opens its connections through here.
import { Redis, type RedisOptions } from 'ioredis';

/** The BullMQ queue every pilot command uses (the Redis database in the URL keeps pilots apart). */
export const QUEUE_NAME = 'iwibench-attempts';

export type QueueFlags = { queue: string; 'queue-password-env'?: string };

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
  return {
    host,
    port: url.port ? Number(url.port) : 6379,
    db,
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(password ? { password } : {}),
    ...(url.protocol === 'rediss:' ? { tls: { servername: host } } : {}),
    // BullMQ's workers wait out a Redis restart instead of failing their commands.
    maxRetriesPerRequest: null,
  };
}

/** Fail at once, naming the URL, when no Redis answers (a queue's own connection would wait for one forever). */
export async function checkQueue(connection: RedisOptions, url: string): Promise<void> {
  const probe = new Redis({ ...connection, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {}); // reported below, once
  try {
    await probe.connect();
    await probe.ping();
  } catch (error) {
    throw new Error(
      `no Redis answers at ${url} (${(error as Error).message}); start one (README: "Pilots on a queue")`,
    );
  } finally {
    probe.disconnect();
  }
}
