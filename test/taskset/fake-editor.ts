// A fake editor model for pipeline tests: a real OpenAI-compatible HTTP server (Chat Completions and Responses)
// that answers from the conversation, so concurrent editors stay deterministic: with no tool result yet, it calls
// write_weights (a small fill) with a reasoning item; after a tool result, it replies with a final text.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const FAKE_KEY = 'sk-fake-pipeline';
export const USAGE = { input: 120, cached: 40, output: 15, reasoning: 5 };
const EDIT = { op: 'fill', tensor: 'model.layers.2.post_feedforward_layernorm.weight', slice: [[0, 8]], value: 0.5 };

export async function startFakeEditor(): Promise<{
  url: string;
  requests: { path: string; body: any }[];
  close: () => Promise<void>;
}> {
  const requests: { path: string; body: any }[] = [];
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    requests.push({ path: request.url ?? '', body });
    if (request.headers.authorization !== `Bearer ${FAKE_KEY}`) {
      response
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: { message: 'bad key', type: 'invalid_request_error' } }));
      return;
    }
    const n = requests.length;
    if (request.url === '/v1/chat/completions') {
      const done = body.messages.some((m: { role: string }) => m.role === 'tool');
      const message = done
        ? { role: 'assistant', content: 'Edited; submitting.' }
        : {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: `call_${n}`,
                type: 'function',
                function: { name: 'write_weights', arguments: JSON.stringify(EDIT) },
              },
            ],
          };
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${n}`,
          object: 'chat.completion',
          created: 0,
          model: body.model,
          choices: [{ index: 0, message, finish_reason: done ? 'stop' : 'tool_calls' }],
          usage: {
            prompt_tokens: USAGE.input,
            completion_tokens: USAGE.output,
            total_tokens: USAGE.input + USAGE.output,
            prompt_tokens_details: { cached_tokens: USAGE.cached },
            completion_tokens_details: { reasoning_tokens: USAGE.reasoning },
          },
        }),
      );
      return;
    }
    // Responses API
    const done = body.input.some((item: { type?: string }) => item.type === 'function_call_output');
    const output = done
      ? [
          {
            type: 'message',
            id: `msg_${n}`,
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'Edited; submitting.', annotations: [] }],
          },
        ]
      : [
          { type: 'reasoning', id: `rs_${n}`, summary: [], encrypted_content: `enc-${n}` },
          {
            type: 'function_call',
            id: `fc_${n}`,
            call_id: `call_${n}`,
            name: 'write_weights',
            arguments: JSON.stringify(EDIT),
            status: 'completed',
          },
        ];
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `resp_${n}`,
        object: 'response',
        created_at: 0,
        model: body.model,
        status: 'completed',
        output,
        usage: {
          input_tokens: USAGE.input,
          input_tokens_details: { cached_tokens: USAGE.cached },
          output_tokens: USAGE.output,
          output_tokens_details: { reasoning_tokens: USAGE.reasoning },
          total_tokens: USAGE.input + USAGE.output,
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
