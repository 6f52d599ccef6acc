// npx iwibench pilot dashboard --queue URL [--port 8790] [--host 127.0.0.1] [--output-dir runs/pilot]
// bull-board (the dashboard BullMQ users know) on the queue, live: each lane (one per arithmetic) with its jobs by
// state, their data, progress (a running try's worker and phase), results and errors; a lane enqueued on later shows
// up within seconds. A finished attempt links to its page, rendered from the attempt folder as `report` renders it. On
// 127.0.0.1 by default; bound elsewhere it asks for a token (from the variable --token-env names), given once as
// ?token=… and then kept in a cookie.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import { Queue } from 'bullmq';
import Fastify, { type FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { readAttemptFolder, renderAttemptPage } from '../../report/index.ts';
import { attemptFolder, checkQueue, listLanes, queueConnection, type ResultsFile } from '../../taskset/index.ts';
import { defineCommand, parseCommand } from '../args.ts';
import { QUEUE_FLAG_DEFAULTS, QUEUE_FLAG_HELP } from './queue-flags.ts';

const defaults = {
  ...QUEUE_FLAG_DEFAULTS,
  port: 8790,
  host: '127.0.0.1',
  'token-env': undefined as string | undefined,
  'output-dir': 'runs/pilot',
};

export const command = defineCommand({
  usage: 'pilot dashboard',
  description: 'bull-board on the queue: its jobs live, each finished attempt linked to its page (from --output-dir).',
  examples: ['npx iwibench pilot dashboard --queue redis://127.0.0.1:6379/0 --port 8790 --output-dir runs/pilot'],
  defaults,
  help: {
    ...QUEUE_FLAG_HELP,
    port: 'the port to serve on',
    host: 'the address to bind: 127.0.0.1 (default) or, with --token-env, another',
    'token-env': 'the environment variable holding the token a browser must give (required beyond loopback)',
    'output-dir': "the workers' output folder (shared or merged): finished attempts' pages come from it",
  },
  required: ['queue'],
  integers: ['port'],
  numbers: ['queue-timeout-seconds'],
});

const LOOPBACK = ['127.0.0.1', '::1', 'localhost'];
const COOKIE = 'iwibench_dashboard';
/** How often the lanes are looked up again. */
const LANES_MS = 5000;

export type Dashboard = { app: FastifyInstance; url: string; close: () => Promise<void> };

export async function startDashboard(options: {
  connection: ReturnType<typeof queueConnection>;
  outputDir: string;
  host: string;
  port: number;
  token?: string;
}): Promise<Dashboard> {
  if (!LOOPBACK.includes(options.host) && !options.token)
    throw new Error(`the dashboard on ${options.host} (beyond loopback) needs a token: --token-env VARIABLE`);
  const client = new Redis(options.connection);
  client.on('error', () => {});
  const queues = new Map<string, Queue>();
  const page = (id: string) => `/attempts/${encodeURIComponent(id)}`;
  const resultsOf = (id: string) => path.join(attemptFolder(options.outputDir, id), 'results.json');
  const adapterOf = (lane: string) => {
    const queue = new Queue(lane, { connection: options.connection });
    queue.on('error', () => {});
    queues.set(lane, queue);
    const adapter = new BullMQAdapter(queue, {
      readOnlyMode: true, // retry, clean, pause: the pilot commands, one definition each
      externalJobUrl: (job) =>
        job.finishedOn && existsSync(resultsOf(String(job.id)))
          ? { displayText: 'attempt page', href: page(String(job.id)) }
          : { href: '' },
    });
    // The job's data names its attempt page once it has one.
    adapter.setFormatter('data', (data: Record<string, unknown>) =>
      typeof data?.id === 'string' && existsSync(resultsOf(data.id)) ? { ...data, attempt_page: page(data.id) } : data,
    );
    return adapter;
  };
  const server = new FastifyAdapter();
  const board = createBullBoard({
    queues: (await listLanes(client)).map(({ lane }) => adapterOf(lane)),
    serverAdapter: server,
    options: { uiConfig: { boardTitle: 'IWIBench pilot' } },
  });
  server.setBasePath('/');
  // Lanes enqueued on after the start.
  const refresh = setInterval(
    () =>
      void listLanes(client).then(
        (lanes) => lanes.filter(({ lane }) => !queues.has(lane)).forEach(({ lane }) => board.addQueue(adapterOf(lane))),
        () => {},
      ),
    LANES_MS,
  );
  refresh.unref();

  const app = Fastify();
  if (options.token) {
    const expected = Buffer.from(options.token);
    const matches = (given: string | undefined) =>
      given !== undefined &&
      Buffer.byteLength(given) === expected.length &&
      timingSafeEqual(Buffer.from(given), expected);
    app.addHook('onRequest', async (request, reply) => {
      const query = (request.query as { token?: string } | undefined)?.token;
      const cookie = /(?:^|;\s*)iwibench_dashboard=([^;]+)/.exec(request.headers.cookie ?? '')?.[1];
      if (matches(query)) {
        reply.header('set-cookie', `${COOKIE}=${options.token}; HttpOnly; SameSite=Strict; Path=/`);
        return;
      }
      if (!matches(cookie ? decodeURIComponent(cookie) : undefined))
        return reply.code(401).type('text/plain').send('a token is needed: open the URL the dashboard printed\n');
    });
  }
  app.get('/attempts/:id', async (request, reply) => {
    const { id } = request.params as { id: string };
    const file = resultsOf(id);
    if (id.includes('/') || id.startsWith('.') || !existsSync(file))
      return reply.code(404).type('text/plain').send(`no finished attempt ${id} in ${options.outputDir}\n`);
    const results = JSON.parse(readFileSync(file, 'utf8')) as ResultsFile;
    const html = renderAttemptPage({
      results,
      editor: results.editor?.label ?? '(unknown editor)',
      attempt: id,
      resultsFile: file,
      folder: readAttemptFolder(file, results),
      replays: [],
      back: '/',
    });
    return reply.type('text/html; charset=utf-8').send(html);
  });
  await app.register(server.registerPlugin(), { prefix: '/' });
  await app.listen({ host: options.host, port: options.port });
  const { port } = app.server.address() as { port: number };
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    app,
    url: `http://${host}:${port}/`,
    close: async () => {
      clearInterval(refresh);
      await app.close();
      await Promise.all([...queues.values()].map((queue) => queue.close()));
      client.disconnect();
    },
  };
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const connection = queueConnection(flags);
  await checkQueue(connection, flags.queue, flags['queue-timeout-seconds'] * 1000);
  const variable = flags['token-env'];
  const token = variable === undefined ? undefined : process.env[variable];
  if (variable !== undefined && !token) throw new Error(`--token-env: $${variable} is not set`);
  const dashboard = await startDashboard({
    connection,
    outputDir: flags['output-dir'],
    host: flags.host,
    port: flags.port,
    ...(token ? { token } : {}),
  });
  process.stdout.write(`dashboard: ${dashboard.url}${token ? '?token=<the token>' : ''}\n`);
  await new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
  });
  await dashboard.close();
}
