// A fake upstream API: a real HTTP server on 127.0.0.1 (ephemeral port) whose answers each test scripts.
// It records every request and, like the real API, refuses any key but UPSTREAM_KEY with a 401.
// `startProxy` puts the proxy under test in front of it, with the real `openai` client.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { buildProxy, type ProxyOptions } from '../../editor-proxy/index.ts';

export const UPSTREAM_KEY = 'sk-upstream-from-env';
/** The key the harness's client holds; the proxy must never pass it on. */
export const CLIENT_KEY = 'sk-client-own-key';

export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export type Handler = (request: SeenRequest, response: http.ServerResponse) => void | Promise<void>;

export class FakeUpstream {
  readonly requests: SeenRequest[] = [];
  handler: Handler = (_request, response) =>
    sendJson(response, 500, { error: { message: 'no handler set', type: 'server_error' } });

  private constructor(
    private readonly server: http.Server,
    /** Base URL, as the proxy's `upstreamUrl` expects it. */
    readonly url: string,
  ) {}

  static async start(): Promise<FakeUpstream> {
    let fake: FakeUpstream | undefined;
    const server = http.createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      const seen = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: text === '' ? undefined : JSON.parse(text),
      };
      fake!.requests.push(seen);
      if (request.headers.authorization !== `Bearer ${UPSTREAM_KEY}`) {
        sendJson(response, 401, {
          error: {
            message: 'Incorrect API key provided',
            type: 'invalid_request_error',
            code: 'invalid_api_key',
            param: null,
          },
        });
        return;
      }
      await fake!.handler(seen, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeUpstream(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections(); // including the ones a test left hanging on purpose
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export function sendJson(
  response: http.ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/**
 * Server-sent events, one write per event. `afterEach(i)` runs after event i is written, so a test can hold the
 * rest back until the client has seen it (proof that nothing between them buffers the stream).
 */
export async function sendEvents(
  response: http.ServerResponse,
  events: Array<{ event?: string; data: unknown }>,
  options: { done?: boolean; afterEach?: (index: number) => Promise<void> } = {},
): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const [index, { event, data }] of events.entries()) {
    response.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
    await options.afterEach?.(index);
  }
  if (options.done ?? true) response.write('data: [DONE]\n\n');
  response.end();
}

/** The proxy under test, listening on an ephemeral port, and an `openai` client that talks to it with its own key. */
export async function startProxy(
  options: Omit<ProxyOptions, 'apiKey'> & { apiKey?: string },
): Promise<{ app: FastifyInstance; url: string; client: OpenAI }> {
  const app = buildProxy({ apiKey: UPSTREAM_KEY, retryBaseDelayMs: 10, ...options });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url, client: new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${url}/v1` }) };
}
