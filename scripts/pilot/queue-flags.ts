// The flags every queue command shares: where the queue is, and where its password is.
export const QUEUE_FLAG_DEFAULTS = {
  queue: '',
  'queue-password-env': undefined as string | undefined,
};

export const QUEUE_FLAG_HELP = {
  queue: 'the Redis holding the queue: redis://HOST:PORT/DB, or rediss://HOST:PORT/DB for TLS',
  'queue-password-env': "the environment variable holding Redis's password (never on the command line)",
};
