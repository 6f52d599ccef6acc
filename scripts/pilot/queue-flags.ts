// The flags every queue command shares: where the queue is, its password's variable, its TLS files, and how long a
// command (not a worker) waits for Redis before it gives up.
import { boundedConnection, checkQueue, queueConnection, withinBound } from '../../taskset/index.ts';

export const QUEUE_FLAG_DEFAULTS = {
  queue: '',
  'queue-password-env': undefined as string | undefined,
  'queue-tls-ca': undefined as string | undefined,
  'queue-tls-cert': undefined as string | undefined,
  'queue-tls-key': undefined as string | undefined,
  'queue-timeout-seconds': 15,
};

export const QUEUE_FLAG_HELP = {
  queue: 'the Redis holding the queue: redis://[USER@]HOST:PORT/DB, or rediss://… for TLS (USER: an ACL user)',
  'queue-password-env': "the environment variable holding Redis's password (never on the command line)",
  'queue-tls-ca': "with rediss://: the CA certificate (PEM file) that signed the server's",
  'queue-tls-cert': 'with rediss://: a client certificate (PEM file), for a server that asks for one',
  'queue-tls-key': "with rediss://: the client certificate's key (PEM file)",
  'queue-timeout-seconds': 'a command (not a worker) gives up when Redis does not answer within this time',
};

export type QueueCommandFlags = typeof QUEUE_FLAG_DEFAULTS;

/**
 * A command's queue: checked (answering, noeviction), then `work` on a bounded connection, given up with one line
 * after --queue-timeout-seconds. Only a worker waits for Redis forever.
 */
export async function onQueue<T>(
  flags: QueueCommandFlags,
  work: (connection: ReturnType<typeof queueConnection>) => Promise<T>,
): Promise<T> {
  const ms = flags['queue-timeout-seconds'] * 1000;
  const connection = boundedConnection(queueConnection(flags), ms);
  await checkQueue(connection, flags.queue, ms);
  return withinBound(flags.queue, ms, () => work(connection));
}
