// A fake OpenAI-compatible editor API: a real HTTP server on 127.0.0.1 (ephemeral port) that speaks both Chat
// Completions (POST /v1/chat/completions) and the Responses API (POST /v1/responses). Each request takes the next
// scripted reply and renders it in the protocol of the path it came to, with usage (cached and reasoning tokens)
// and, for Responses, reasoning items with encrypted content. Requests and response bodies are recorded.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export const API_KEY = 'sk-fake-editor-key';

export type FakeUsage = { input: number; cached: number; output: number; reasoning: number };
export type FakeCall = { name: string; arguments: string | Record<string, unknown> };
export type FakeReply =
  | {
      calls?: FakeCall[];
      text?: string;
      reasoning?: string;
      chatReasoningField?: 'reasoning_content' | 'reasoning';
      usage: FakeUsage;
      delayMs?: number;
    }
  | { status: number; message: string };

export type Seen = { path: string; headers: http.IncomingHttpHeaders; body: any };

export class FakeEditorApi {
  readonly requests: Seen[] = [];
  /** The bodies sent back, in order (errors included). */
  readonly responses: any[] = [];
  private replies: FakeReply[] = [];
  private counter = 0;

  private constructor(
    private readonly server: http.Server,
    /** Base URL, as `--editor-base-url` takes it. */
    readonly url: string,
  ) {}

  static async start(): Promise<FakeEditorApi> {
    let fake: FakeEditorApi | undefined;
    const server = http.createServer(async (request, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      const seen = {
        path: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null'),
      };
      fake!.requests.push(seen);
      await fake!.answer(seen, response);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    fake = new FakeEditorApi(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
    return fake;
  }

  /** The replies for the next requests, in order; forgets earlier requests and restarts the ids. */
  script(replies: FakeReply[]): void {
    this.replies = [...replies];
    this.counter = 0;
    this.requests.length = 0;
    this.responses.length = 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async answer(seen: Seen, response: http.ServerResponse): Promise<void> {
    if (seen.headers.authorization !== `Bearer ${API_KEY}`)
      return this.send(response, 401, error('Incorrect API key provided', 'invalid_request_error'));
    const reply = this.replies.shift();
    if (!reply)
      return this.send(
        response,
        400,
        error('the fake editor API has no reply left for this request', 'invalid_request_error'),
      );
    // retry-after-ms keeps the SDK's retries fast.
    if ('status' in reply)
      return this.send(response, reply.status, error(reply.message, 'server_error'), { 'retry-after-ms': '1' });
    if (reply.delayMs) await sleep(reply.delayMs);
    const n = ++this.counter;
    if (seen.path === '/v1/chat/completions')
      return this.send(response, 200, chatCompletion(n, seen.body.model, reply));
    if (seen.path === '/v1/responses') return this.send(response, 200, responsesResponse(n, seen.body.model, reply));
    return this.send(response, 404, error(`no route ${seen.path}`, 'invalid_request_error'));
  }

  private send(
    response: http.ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ): void {
    this.responses.push(body);
    if (!response.destroyed)
      response
        .writeHead(status, {
          'content-type': 'application/json',
          'x-request-id': `req_${this.responses.length}`,
          ...headers,
        })
        .end(JSON.stringify(body));
  }
}

function error(message: string, type: string) {
  return { error: { message, type, code: null, param: null } };
}

const argumentText = (call: FakeCall): string =>
  typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);

function chatCompletion(n: number, model: string, reply: Extract<FakeReply, { usage: FakeUsage }>) {
  const calls = reply.calls ?? [];
  return {
    id: `chatcmpl-${n}`,
    object: 'chat.completion',
    created: 1_750_000_000 + n,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          refusal: null,
          // Chat providers return reasoning beside the content (DeepSeek/vLLM `reasoning_content`, OpenRouter `reasoning`).
          ...(reply.reasoning !== undefined
            ? { [reply.chatReasoningField ?? 'reasoning_content']: reply.reasoning }
            : {}),
          ...(calls.length > 0
            ? {
                tool_calls: calls.map((call, i) => ({
                  id: `call_${n}_${i}`,
                  type: 'function',
                  function: { name: call.name, arguments: argumentText(call) },
                })),
              }
            : {}),
        },
        finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: reply.usage.input,
      completion_tokens: reply.usage.output,
      total_tokens: reply.usage.input + reply.usage.output,
      prompt_tokens_details: { cached_tokens: reply.usage.cached, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: reply.usage.reasoning,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
  };
}

function responsesResponse(n: number, model: string, reply: Extract<FakeReply, { usage: FakeUsage }>) {
  const output: unknown[] = [];
  if (reply.reasoning !== undefined) {
    output.push({
      type: 'reasoning',
      id: `rs_${n}`,
      summary: [{ type: 'summary_text', text: reply.reasoning }],
      encrypted_content: `gAAAA-encrypted-${n}`,
    });
  }
  if (reply.text !== undefined) {
    output.push({
      type: 'message',
      id: `msg_${n}`,
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: reply.text, annotations: [] }],
    });
  }
  (reply.calls ?? []).forEach((call, i) =>
    output.push({
      type: 'function_call',
      id: `fc_${n}_${i}`,
      call_id: `call_${n}_${i}`,
      name: call.name,
      arguments: argumentText(call),
      status: 'completed',
    }),
  );
  return {
    id: `resp_${n}`,
    object: 'response',
    created_at: 1_750_000_000 + n,
    status: 'completed',
    model,
    output,
    error: null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: true,
    temperature: null,
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    usage: {
      input_tokens: reply.usage.input,
      input_tokens_details: { cached_tokens: reply.usage.cached },
      output_tokens: reply.usage.output,
      output_tokens_details: { reasoning_tokens: reply.usage.reasoning },
      total_tokens: reply.usage.input + reply.usage.output,
    },
  };
}
