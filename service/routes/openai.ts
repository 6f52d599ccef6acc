// OpenAI-compatible endpoints (admin token): /v1/models, /v1/chat/completions (plain and streamed), /v1/completions.
// They serve the pristine target (`model: "<id>"`) or a submitted patch (`"<id>+patch:<sha256>"`), decoding greedily,
// so any OpenAI client (the MMLU-Pro runner, for one) can measure an edited model. Errors use OpenAI's error shape.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth.ts';
import type { EpisodeRegistry } from '../episodes.ts';
import { IwiError, isIwiError } from '../errors.ts';
import type { GenerateResult } from '../model/runtime.ts';
import { overlaySource, type WeightSource } from '../model/weight-source.ts';
import type { ChatMessage } from '../model/tokenizer.ts';
import type { Target } from '../target.ts';
import { PATCH_ARRAYS, PATCH_JSON, applyPatch } from '../weights/patch.ts';

export type OpenAIRoutesOptions = { target: Target; registry: EpisodeRegistry; auth: Authenticator };

const DEFAULT_MAX_TOKENS = 256;
const MAX_TOKENS_CAP = 8192;
const PATCH_CACHE_SIZE = 2; // patched weight sets kept (each holds its touched tensors' BF16 bits only)

const contentSchema = {
  anyOf: [
    { type: 'string' },
    { type: 'array', items: { type: 'object', properties: { type: { const: 'text' }, text: { type: 'string' } }, required: ['type', 'text'] } },
  ],
};
const common = {
  model: { type: 'string' },
  max_tokens: { type: 'integer', minimum: 1 },
  max_completion_tokens: { type: 'integer', minimum: 1 },
  temperature: { type: 'number', minimum: 0 },
  top_p: { type: 'number' },
  n: { type: 'integer', minimum: 1 },
  stop: { anyOf: [{ type: 'string' }, { type: 'array', maxItems: 8, items: { type: 'string' } }, { type: 'null' }] },
  stream: { type: 'boolean' },
  stream_options: { type: ['object', 'null'] },
};
const chatSchema = {
  type: 'object',
  properties: {
    ...common,
    messages: { type: 'array', minItems: 1, maxItems: 256, items: { type: 'object', properties: { role: { enum: ['system', 'developer', 'user', 'assistant'] }, content: contentSchema }, required: ['role', 'content'] } },
  },
  required: ['model', 'messages'],
};
const completionSchema = {
  type: 'object',
  properties: { ...common, prompt: { anyOf: [{ type: 'string' }, { type: 'array', minItems: 1, maxItems: 1, items: { type: 'string' } }] } },
  required: ['model', 'prompt'],
};

type Common = {
  model: string;
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  n?: number;
  stop?: string | string[] | null;
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
};
type ChatBody = Common & { messages: { role: string; content: string | { type: 'text'; text: string }[] }[] };
type CompletionBody = Common & { prompt: string | string[] };

export async function openaiRoutes(app: FastifyInstance, { target, registry, auth }: OpenAIRoutesOptions): Promise<void> {
  app.addHook('onRequest', async (request) => void auth.require(request.headers.authorization, ['admin']));
  app.setErrorHandler((error: FastifyError | IwiError, request, reply) => {
    const invalid = !isIwiError(error) && error.validation !== undefined;
    const status = isIwiError(error) ? error.statusCode : invalid ? 400 : (error.statusCode ?? 500);
    if (status >= 500) request.log.error(error);
    const type = status === 401 ? 'authentication_error' : status === 404 ? 'not_found_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
    const message = invalid ? `invalid request: ${error.message}` : error.message;
    reply.code(status).send({ error: { message, type, param: null, code: isIwiError(error) ? error.code : (error.code ?? null) } });
  });

  // Keyed by patch id, i.e. by content: an entry is served only while its folder's files are the ones whose bytes
  // were verified (same inode, size, mtime and ctime; any rewrite, copy over or rename changes ctime), otherwise the
  // folder is loaded and its id checked again, so a swapped folder is refused, never served from the cache.
  const patchSources = new Map<string, { source: WeightSource; files: string }>();
  /** The weights a model name stands for: pristine, or a submitted patch applied to pristine (id and digests verified). */
  const weightsFor = (model: string): WeightSource => {
    if (model === target.modelId) return target.pristine;
    const match = /^(.+)\+patch:([0-9a-f]{64})$/.exec(model);
    const dir = match && match[1] === target.modelId ? registry.patches.get(match[2]!) : undefined;
    if (!match || !dir) throw new IwiError('MODEL_NOT_FOUND', `model "${model}" is not served here (GET /v1/models lists ${target.modelId} and its submitted patches)`);
    const id = match[2]!;
    const files = fileStamps(dir); // taken before reading: a change while reading shows at the next request
    const cached = patchSources.get(id);
    if (cached && cached.files === files) return cached.source;
    patchSources.delete(id);
    const source = overlaySource(target.pristine, applyPatch(target.checkpoint, dir, id)); // PATCH_ID_MISMATCH if swapped
    if (patchSources.size >= PATCH_CACHE_SIZE) patchSources.delete(patchSources.keys().next().value!);
    patchSources.set(id, { source, files });
    return source;
  };

  app.get('/models', async () => ({
    object: 'list',
    data: [target.modelId, ...[...registry.patches.keys()].map((sha) => `${target.modelId}+patch:${sha}`)].map((id) => ({ id, object: 'model', created: 0, owned_by: 'iwibench' })),
  }));

  app.post('/chat/completions', { schema: { body: chatSchema } }, async (request, reply) => {
    const body = request.body as ChatBody;
    const messages = body.messages.map(toChatMessage);
    const ids = target.promptIds({ messages });
    return complete(request, reply, body, ids, 'chat');
  });

  app.post('/completions', { schema: { body: completionSchema } }, async (request, reply) => {
    const body = request.body as CompletionBody;
    const ids = target.promptIds({ prompt: Array.isArray(body.prompt) ? body.prompt[0]! : body.prompt });
    return complete(request, reply, body, ids, 'text');
  });

  async function complete(request: FastifyRequest, reply: FastifyReply, body: Common, ids: number[], kind: 'chat' | 'text') {
    if ((body.temperature ?? 0) > 0) throw new IwiError('UNSUPPORTED_PARAMETER', `temperature ${body.temperature}: the target decodes greedily only (send 0 or omit it)`);
    if ((body.n ?? 1) !== 1) throw new IwiError('UNSUPPORTED_PARAMETER', 'n must be 1');
    const weights = weightsFor(body.model);
    const maxNewTokens = Math.min(body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS, MAX_TOKENS_CAP);
    const stops = body.stop == null ? [] : Array.isArray(body.stop) ? body.stop.filter((s) => s.length > 0) : [body.stop];
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const decode = (outputIds: readonly number[]) => cutAtStop(target.tokenizer.decode([...outputIds]), stops);
    const stopWhen = stops.length > 0 ? (_: number, outputIds: readonly number[]) => decode(outputIds).stopped : undefined;

    if (!body.stream) {
      const [result] = await target.queue.run('openai', () => target.engine.generate([ids], { maxNewTokens, weights, stopWhen }));
      const { text } = decode(result!.outputIds);
      const choice = kind === 'chat'
        ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: finishReason(result!), logprobs: null }
        : { index: 0, text, finish_reason: finishReason(result!), logprobs: null };
      return { id, object: kind === 'chat' ? 'chat.completion' : 'text_completion', created, model: body.model, choices: [choice], usage: usage(result!) };
    }

    // Streaming: server-sent events, one chunk per stable piece of text. Text that could be the start of a stop
    // string is held back until it is known not to be one.
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const send = (data: unknown) => reply.raw.write(`data: ${JSON.stringify(data)}\n\n`);
    const object = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
    const chunk = (delta: string | null, finish: string | null, extra: Record<string, unknown> = {}) => ({
      id,
      object,
      created,
      model: body.model,
      choices: [kind === 'chat' ? { index: 0, delta: delta === null ? {} : { content: delta }, finish_reason: finish, logprobs: null } : { index: 0, text: delta ?? '', finish_reason: finish, logprobs: null }],
      ...extra,
    });
    if (kind === 'chat') send({ ...chunk(null, null), choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }] });
    const holdBack = Math.max(0, ...stops.map((s) => s.length - 1));
    const outputIds: number[] = [];
    let emitted = 0;
    const emit = (final: boolean) => {
      const { text } = decode(outputIds);
      const stable = final ? text.length : text.endsWith('\uFFFD') ? text.length - 1 : text.length - holdBack; // U+FFFD: a character still being spelled in bytes
      if (stable > emitted) {
        send(chunk(text.slice(emitted, stable), null));
        emitted = stable;
      }
    };
    try {
      const [result] = await target.queue.run('openai', () =>
        target.engine.generate([ids], { maxNewTokens, weights, stopWhen, onToken: (_, token) => (outputIds.push(token), emit(false)) }),
      );
      emit(true);
      send(chunk(null, finishReason(result!)));
      if (body.stream_options?.include_usage) send({ id, object, created, model: body.model, choices: [], usage: usage(result!) });
    } catch (error) {
      send({ error: { message: (error as Error).message, type: 'server_error', param: null, code: null } });
    }
    reply.raw.end('data: [DONE]\n\n');
  }
}

function toChatMessage(message: ChatBody['messages'][number]): ChatMessage {
  const content = typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join('');
  const role = message.role === 'developer' ? 'system' : (message.role as ChatMessage['role']);
  return { role, content };
}

/** The text up to the first stop string, and whether one was found. */
function cutAtStop(text: string, stops: string[]): { text: string; stopped: boolean } {
  let cut = -1;
  for (const stop of stops) {
    const at = text.indexOf(stop);
    if (at >= 0 && (cut < 0 || at < cut)) cut = at;
  }
  return cut < 0 ? { text, stopped: false } : { text: text.slice(0, cut), stopped: true };
}

function finishReason(result: GenerateResult): 'stop' | 'length' {
  return result.stopReason === 'max_tokens' ? 'length' : 'stop';
}

function usage(result: GenerateResult) {
  return { prompt_tokens: result.promptTokens, completion_tokens: result.outputTokens, total_tokens: result.promptTokens + result.outputTokens };
}

/** What identifies the files of a patch folder as they are now, without reading them (see the patch cache). */
function fileStamps(dir: string): string {
  return [PATCH_JSON, PATCH_ARRAYS]
    .map((name) => {
      try {
        const s = statSync(path.join(dir, name), { bigint: true });
        return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
      } catch {
        return 'missing'; // loading then refuses the folder with its own message
      }
    })
    .join('|');
}
