// The queue's Redis as a pilot needs it (docs/running.md, "Pilots on a queue"), reported rather than enforced: reached
// or why not, its version, TLS, maxmemory-policy (noeviction required), and its persistence (appendonly,
// appendfsync). The connection is the queue commands' own (--queue and its password and TLS flags).
import { Redis } from 'ioredis';
import { boundedConnection, queueConnection, withinBound } from '../../taskset/index.ts';
import type { QueueCommandFlags } from '../pilot/queue-flags.ts';

const field = (info: string, name: string) => new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1] ?? null;

export async function queueReport(flags: QueueCommandFlags) {
  const ms = flags['queue-timeout-seconds'] * 1000;
  const connection = boundedConnection(queueConnection(flags), ms);
  const client = new Redis({ ...connection, lazyConnect: true, enableReadyCheck: false, retryStrategy: () => null });
  let refused: Error | undefined; // the server's own refusal (WRONGPASS, TLS) comes as an event
  client.on('error', (error: Error) => (refused ??= error));
  try {
    const info = await withinBound(flags.queue, ms, async () => {
      await client.connect();
      return client.info();
    });
    const policy = field(info, 'maxmemory_policy');
    let appendfsync: string | null = null;
    try {
      appendfsync = ((await client.config('GET', 'appendfsync')) as string[])[1] ?? null;
    } catch {
      // CONFIG may be refused to an ACL user: unknown
    }
    return {
      url: flags.queue,
      reached: true,
      version: field(info, 'redis_version'),
      tls: connection.tls !== undefined,
      maxmemory_policy: policy,
      noeviction: policy === 'noeviction',
      appendonly: field(info, 'aof_enabled') === '1',
      appendfsync,
    };
  } catch (error) {
    return { url: flags.queue, reached: false, error: (refused ?? (error as Error)).message };
  } finally {
    client.disconnect();
  }
}
