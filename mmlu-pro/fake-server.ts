// A fake OpenAI-compatible server for tests and the benchmark: a real HTTP server on 127.0.0.1 (ephemeral port)
// speaking the Chat Completions and Completions JSON, `usage` included, whose replies a script decides.
// Token counts are whitespace-separated words, so tests can know them exactly.
import Fastify from 'fastify';

export type FakeRequest = {
  endpoint: 'chat' | 'completions';
  body: Record<string, unknown>;
  /** The text of the last "Question: … \nOptions:" block of the prompt: the question being asked. */
  question: string | null;
  /** 1 for the first request about this question, 2 for the next (a retry or a rerun), … */
  attempt: number;
};

export type FakeReply = {
  /** The completion text (ignored when status is an error). */
  content: string;
  /** HTTP status; 200 by default. */
  status?: number;
  /** Wait this long before replying. */
  delayMs?: number;
  headers?: Record<string, string>;
};

export type FakeServer = {
  /** Base URL for the client, ending in /v1. */
  url: string;
  /** Every request received, unless started with `keepRequests: false` (the benchmark: bodies are large). */
  requests: FakeRequest[];
  close(): Promise<void>;
};

export function countWords(text: string): number {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/).length;
}

export function lastQuestion(prompt: string): string | null {
  const start = prompt.lastIndexOf('Question: ');
  if (start < 0) return null;
  const end = prompt.indexOf('\nOptions: ', start);
  return prompt.slice(start + 'Question: '.length, end < 0 ? undefined : end);
}

export async function startFakeServer(
  answer: (request: FakeRequest) => FakeReply | Promise<FakeReply>,
  options: { keepRequests?: boolean } = {},
): Promise<FakeServer> {
  const app = Fastify({ logger: false, forceCloseConnections: true, bodyLimit: 16 * 1024 * 1024 });
  const requests: FakeRequest[] = [];
  const attempts = new Map<string, number>();
  const waiting = new Set<() => void>();
  let serial = 0;

  async function handle(endpoint: FakeRequest['endpoint'], body: Record<string, unknown>) {
    const promptText =
      endpoint === 'chat' ? chatText(body.messages) : typeof body.prompt === 'string' ? body.prompt : null;
    if (typeof body.model !== 'string' || promptText === null) {
      return {
        status: 400,
        headers: {},
        payload: apiError('model and messages (or prompt) are required', 'invalid_request_error'),
      };
    }
    const question = endpoint === 'chat' ? lastQuestion(lastMessage(body.messages)) : lastQuestion(promptText);
    const key = question ?? '';
    const attempt = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, attempt);
    const request: FakeRequest = { endpoint, body, question, attempt };
    if (options.keepRequests !== false) requests.push(request);
    const reply = await answer(request);
    if (reply.delayMs) {
      // Closing the server ends every wait at once.
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiting.delete(done);
          resolve();
        };
        const timer = setTimeout(done, reply.delayMs);
        waiting.add(done);
      });
    }
    const status = reply.status ?? 200;
    if (status >= 400)
      return {
        status,
        headers: reply.headers ?? {},
        payload: apiError(reply.content || `fake error ${status}`, 'server_error'),
      };
    const usage = { prompt_tokens: countWords(promptText), completion_tokens: countWords(reply.content) };
    const common = {
      id: `fake-${++serial}`,
      created: 1_700_000_000,
      model: body.model,
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    };
    const payload =
      endpoint === 'chat'
        ? {
            ...common,
            object: 'chat.completion',
            choices: [
              {
                index: 0,
                message: { role: 'assistant', content: reply.content, refusal: null },
                logprobs: null,
                finish_reason: 'stop',
              },
            ],
          }
        : {
            ...common,
            object: 'text_completion',
            choices: [{ index: 0, text: reply.content, logprobs: null, finish_reason: 'stop' }],
          };
    return { status, headers: reply.headers ?? {}, payload };
  }

  for (const [route, endpoint] of [
    ['/v1/chat/completions', 'chat'],
    ['/v1/completions', 'completions'],
  ] as const) {
    app.post(route, async (req, res) => {
      const { status, headers, payload } = await handle(endpoint, (req.body ?? {}) as Record<string, unknown>);
      return res.code(status).headers(headers).send(payload);
    });
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('fake server: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}/v1`,
    requests,
    async close() {
      for (const done of [...waiting]) done();
      await app.close();
    },
  };
}

function chatText(messages: unknown): string | null {
  if (!Array.isArray(messages) || messages.length === 0) return null;
  return messages.map((m) => (typeof m?.content === 'string' ? m.content : '')).join('\n');
}

function lastMessage(messages: unknown): string {
  const last = (messages as { content?: unknown }[]).at(-1);
  return typeof last?.content === 'string' ? last.content : '';
}

function apiError(message: string, type: string) {
  return { error: { message, type, param: null, code: null } };
}
