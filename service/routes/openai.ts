// OpenAI-compatible endpoints (admin token): /v1/models, /v1/chat/completions and /v1/completions, plain and
// streamed. They serve the pristine target (`model: "<id>"`) or a submitted patch (`"<id>+patch:<sha256>"`), decoding
// greedily, so any OpenAI client (the MMLU-Pro runner, lm-evaluation-harness) can measure an edited model: prompts as
// text or token ids, `echo`, legacy `logprobs` and chat `logprobs`/`top_logprobs` (service/logprobs.ts). Parameters:
// openai-params.ts. They charge no episode's budget, but every run goes through the one execution queue, one prompt a
// job. Errors use OpenAI's error shape.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { LIMITS } from '../api/limits.ts';
import type { Authenticator } from '../auth.ts';
import { disconnectSignal } from '../disconnect.ts';
import type { EpisodeRegistry } from '../episodes.ts';
import { IwiError, boundedMessage, httpStatus, isIwiError, quote } from '../errors.ts';
import { GenerationLogprobs, promptLogprobs, type TokenLogprob } from '../logprobs.ts';
import { type GenerateResult, overlaySource, type WeightSource } from '../../engine/index.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { Slice } from '../queue.ts';
import type { Target } from '../target.ts';
import { TextOffsets, showToken, textOffsets } from '../token-text.ts';
import { PATCH_ARRAYS, PATCH_JSON, applyPatch } from '../weights/patch.ts';
import {
  CHAT_SCHEMA,
  COMPLETION_SCHEMA,
  OpenAIParameterError,
  checkParameters,
  describeOpenAIValidation,
  type ChatBody,
  type CompletionBody,
} from './openai-params.ts';

export type OpenAIRoutesOptions = { target: Target; registry: EpisodeRegistry; auth: Authenticator };

const DEFAULT_MAX_TOKENS = 256;
const MAX_TOKENS_CAP = 8192;
const PATCH_CACHE_SIZE = 2; // patched weight sets kept (each holds its touched tensors' BF16 bits only)

/** What a request asks of each of its prompts. */
type Ask = {
  kind: 'chat' | 'text';
  model: string;
  weights: WeightSource;
  /** 0: generate nothing (echo only). */
  maxNewTokens: number;
  stops: string[];
  /** How many most likely tokens to return at each position; null: no log-probabilities at all. */
  topK: number | null;
  echo: boolean;
};

/** One prompt's run: its echo (text, token offsets, teacher-forced log-probabilities) and what greedy decoding made. */
type Run = {
  promptIds: number[];
  echo: { text: string; offsets: number[]; logprobs: TokenLogprob[] | null } | null;
  outputIds: number[];
  /** Where each generated token's text starts in the choice's text (after the echo). */
  offsets: TextOffsets;
  generated: GenerationLogprobs | null;
  result: GenerateResult | null;
};

/** Called while a prompt runs (streaming): after its echo is scored, and after each generated token. */
type RunHooks = { echoed?: (run: Run) => void; token?: (run: Run) => void };

export async function openaiRoutes(
  app: FastifyInstance,
  { target, registry, auth }: OpenAIRoutesOptions,
): Promise<void> {
  const { tokenizer } = target;
  app.addHook('onRequest', async (request) => void auth.require(request.headers.authorization, ['admin']));
  app.setErrorHandler((error: FastifyError | IwiError, request, reply) => {
    const invalid = !isIwiError(error) && error.validation !== undefined;
    const status = isIwiError(error) ? httpStatus(error) : invalid ? 400 : ((error as FastifyError).statusCode ?? 500);
    if (status >= 500) request.log.error(error);
    const type =
      status === 401
        ? 'authentication_error'
        : status === 404
          ? 'not_found_error'
          : status >= 500
            ? 'server_error'
            : 'invalid_request_error';
    const { message, param } = invalid
      ? describeOpenAIValidation(error)
      : { message: error.message, param: error instanceof OpenAIParameterError ? error.param : null };
    reply.code(status).send({
      error: {
        message: boundedMessage(message),
        type,
        param,
        code: isIwiError(error) ? error.code : (error.code ?? null),
      },
    });
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
    if (!match || !dir)
      throw new IwiError(
        'MODEL_NOT_FOUND',
        `model ${quote(model)} is not served here (GET /v1/models lists ${target.modelId} and its submitted patches)`,
      );
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
    data: [target.modelId, ...[...registry.patches.keys()].map((sha) => `${target.modelId}+patch:${sha}`)].map(
      (id) => ({ id, object: 'model', created: 0, owned_by: 'iwibench' }),
    ),
  }));

  app.post('/chat/completions', { schema: { body: CHAT_SCHEMA } }, async (request, reply) => {
    const body = request.body as ChatBody;
    checkParameters(body, 'chat');
    const ids = target.promptIds({ messages: body.messages.map(toChatMessage) });
    const ask: Ask = {
      kind: 'chat',
      model: body.model,
      weights: weightsFor(body.model),
      maxNewTokens: Math.min(body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS, MAX_TOKENS_CAP),
      stops: stopsOf(body.stop),
      topK: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
      echo: false,
    };
    return body.stream
      ? stream(reply, ask, [ids], body.stream_options?.include_usage === true)
      : respond(reply, ask, [ids]);
  });

  app.post('/completions', { schema: { body: COMPLETION_SCHEMA } }, async (request, reply) => {
    const body = request.body as CompletionBody;
    checkParameters(body, 'text');
    const prompts = completionPrompts(body.prompt);
    const ask: Ask = {
      kind: 'text',
      model: body.model,
      weights: weightsFor(body.model),
      maxNewTokens: body.max_tokens === 0 ? 0 : Math.min(body.max_tokens ?? DEFAULT_MAX_TOKENS, MAX_TOKENS_CAP),
      stops: stopsOf(body.stop),
      topK: body.logprobs ?? null,
      echo: body.echo === true,
    };
    return body.stream
      ? stream(reply, ask, prompts, body.stream_options?.include_usage === true)
      : respond(reply, ask, prompts);
  });

  /** Token ids of each prompt: a text after a BOS (as `Tokenizer.encode`), token ids exactly as given. */
  function completionPrompts(prompt: CompletionBody['prompt']): number[][] {
    const list =
      typeof prompt === 'string'
        ? [prompt]
        : typeof prompt[0] === 'number'
          ? [prompt as number[]]
          : (prompt as (string | number[])[]);
    const vocabulary = target.checkpoint.config.vocab_size;
    return list.map((p, i) => {
      if (typeof p === 'string') return target.promptIds({ prompt: p });
      if (p.length > LIMITS.promptTokens)
        throw new OpenAIParameterError(
          'prompt',
          `prompt ${i} has ${p.length} tokens; the limit is ${LIMITS.promptTokens}`,
        );
      const bad = p.findIndex((id) => id < 0 || id >= vocabulary);
      if (bad >= 0) {
        throw new OpenAIParameterError(
          'prompt',
          `prompt ${i}: token id ${p[bad]} at position ${bad} is outside the vocabulary 0…${vocabulary - 1}`,
        );
      }
      return p;
    });
  }

  /**
   * One prompt, inside the queue: the echo scored by teacher forcing, then greedy generation with the hooks asked
   * for. Both run slice by slice (`slice.between`); a gone client's call stops at its next slice (an AbortError).
   */
  async function runPrompt(ids: number[], ask: Ask, slice: Slice, hooks: RunHooks = {}): Promise<Run> {
    const control = { between: slice.between, signal: slice.signal };
    let echo: Run['echo'] = null;
    if (ask.echo) {
      const { text, offsets } = textOffsets(tokenizer, ids);
      echo = {
        text,
        offsets,
        logprobs: ask.topK === null ? null : await promptLogprobs(target.engine, ids, ask.weights, ask.topK, control),
      };
    }
    const run: Run = {
      promptIds: ids,
      echo,
      outputIds: [],
      offsets: new TextOffsets(tokenizer, echo?.text.length ?? 0),
      generated: null,
      result: null,
    };
    hooks.echoed?.(run);
    if (ask.maxNewTokens === 0) return run;
    const generated = ask.topK === null ? null : new GenerationLogprobs(ask.topK);
    run.generated = generated;
    const stopAtString = (_: number, outputIds: readonly number[]) =>
      cutAtStop(tokenizer.decode([...outputIds]), ask.stops).stopped;
    const stopWhen = ask.stops.length > 0 ? stopAtString : undefined;
    const [result] = await target.engine.generate([ids], {
      maxNewTokens: ask.maxNewTokens,
      weights: ask.weights,
      ...control,
      stopWhen,
      onLogits: generated?.onLogits,
      onToken: (index, token) => {
        generated?.onToken(index, token);
        run.outputIds.push(token);
        run.offsets.push(token);
        hooks.token?.(run);
      },
    });
    run.result = result!;
    generated?.finish(result!);
    return run;
  }

  /** The generated text cut at the first stop string, and how many generated tokens it shows (all, unless cut). */
  function generatedText(run: Run, ask: Ask): { text: string; stopped: boolean; shown: number } {
    const { text, stopped } = cutAtStop(tokenizer.decode(run.outputIds), ask.stops);
    const end = (run.echo?.text.length ?? 0) + text.length;
    return {
      text,
      stopped,
      shown: stopped ? run.offsets.offsets.filter((offset) => offset < end).length : run.outputIds.length,
    };
  }

  function finishReason(run: Run): 'stop' | 'length' {
    return run.result === null || run.result.stopReason === 'max_tokens' ? 'length' : 'stop';
  }

  /**
   * Legacy completions logprobs for a stretch of a choice: the echo (its first token has none), generated tokens
   * [from, to), and the stop token greedy decoding chose, if asked. `top_logprobs` holds the top k and the token itself.
   */
  function legacyLogprobs(run: Run, parts: { echo?: boolean; from?: number; to?: number; stop?: boolean }) {
    const tokens: string[] = [];
    const tokenLogprobs: (number | null)[] = [];
    const topLogprobs: (Record<string, number> | null)[] = [];
    const textOffset: number[] = [];
    const add = (id: number, entry: TokenLogprob | null, offset: number) => {
      tokens.push(showToken(tokenizer, id).token);
      tokenLogprobs.push(entry ? entry.logprob : null);
      topLogprobs.push(entry ? topDict(entry) : null);
      textOffset.push(offset);
    };
    if (parts.echo && run.echo)
      run.promptIds.forEach((id, i) => add(id, i === 0 ? null : run.echo!.logprobs![i - 1]!, run.echo!.offsets[i]!));
    for (let i = parts.from ?? 0; i < (parts.to ?? 0); i++)
      add(run.outputIds[i]!, run.generated!.tokens[i]!, run.offsets.offsets[i]!);
    const stop = parts.stop ? run.generated?.stop : null;
    if (stop) add(stop.id, stop, (run.echo?.text.length ?? 0) + tokenizer.decode(run.outputIds).length); // after all the text
    return { tokens, token_logprobs: tokenLogprobs, top_logprobs: topLogprobs, text_offset: textOffset };
  }

  /** {token: logprob} of the top k and the token itself; a string shown by two ids keeps the likelier. */
  function topDict(entry: TokenLogprob): Record<string, number> {
    const pairs = new Map<string, number>();
    for (const { id, logprob } of [...entry.top, entry]) {
      const token = showToken(tokenizer, id).token;
      if (!pairs.has(token)) pairs.set(token, logprob);
    }
    return Object.fromEntries(pairs); // own properties, so a token spelled "__proto__" is a key like any other
  }

  function chatLogprobs(entries: TokenLogprob[]) {
    const shown = (id: number, logprob: number) => {
      const { token, bytes } = showToken(tokenizer, id);
      return { token, logprob, bytes };
    };
    return {
      content: entries.map((e) => ({
        ...shown(e.id, e.logprob),
        top_logprobs: e.top.map((t) => shown(t.id, t.logprob)),
      })),
      refusal: null,
    };
  }

  /** Usage as OpenAI counts it: echoed prompt tokens count again as completion tokens. */
  function usageOf(runs: Run[], ask: Ask) {
    const prompt = runs.reduce((sum, r) => sum + r.promptIds.length, 0);
    const completion = runs.reduce((sum, r) => sum + r.outputIds.length + (ask.echo ? r.promptIds.length : 0), 0);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }

  async function respond(reply: FastifyReply, ask: Ask, prompts: number[][]) {
    const signal = disconnectSignal(reply);
    const runs: Run[] = [];
    for (const ids of prompts)
      runs.push(await target.queue.run('openai', (slice) => runPrompt(ids, ask, slice), { signal }));
    const choices = runs.map((run, index) => {
      const generated = generatedText(run, ask);
      if (ask.kind === 'chat') {
        const logprobs = ask.topK === null ? null : chatLogprobs(run.generated?.tokens.slice(0, generated.shown) ?? []);
        return {
          index,
          message: { role: 'assistant', content: generated.text },
          logprobs,
          finish_reason: finishReason(run),
        };
      }
      const logprobs =
        ask.topK === null ? null : legacyLogprobs(run, { echo: true, to: generated.shown, stop: !generated.stopped });
      return { index, text: (run.echo?.text ?? '') + generated.text, logprobs, finish_reason: finishReason(run) };
    });
    const object = ask.kind === 'chat' ? 'chat.completion' : 'text_completion';
    return { id: completionId(ask), object, created: now(), model: ask.model, choices, usage: usageOf(runs, ask) };
  }

  /**
   * Server-sent events: per prompt, one chunk per stable piece of text, with the log-probabilities of the tokens it
   * starts. Text that could be the start of a stop string is held back until it is known not to be one.
   */
  async function stream(reply: FastifyReply, ask: Ask, prompts: number[][], includeUsage: boolean): Promise<void> {
    const signal = disconnectSignal(reply);
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    const send = (data: unknown) => void (reply.raw.destroyed || reply.raw.write(`data: ${JSON.stringify(data)}\n\n`));
    const head = {
      id: completionId(ask),
      object: ask.kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
      created: now(),
      model: ask.model,
    };
    const holdBack = Math.max(0, ...ask.stops.map((s) => s.length - 1));
    const runs: Run[] = [];
    try {
      for (const [index, ids] of prompts.entries()) {
        // One choice's chunk: text, the generated tokens [from, to) and (completions) the echo or the stop token.
        const chunk = (
          run: Run,
          text: string,
          from: number,
          to: number,
          finish: string | null,
          extra: { echo?: boolean; stop?: boolean } = {},
        ) => {
          if (ask.kind === 'chat') {
            const logprobs =
              ask.topK === null || to === from ? null : chatLogprobs(run.generated!.tokens.slice(from, to));
            return {
              ...head,
              choices: [
                {
                  index,
                  delta: text === '' && finish !== null ? {} : { content: text },
                  logprobs,
                  finish_reason: finish,
                },
              ],
            };
          }
          const logprobs = ask.topK === null ? null : legacyLogprobs(run, { ...extra, from, to });
          return { ...head, choices: [{ index, text, logprobs, finish_reason: finish }] };
        };
        if (ask.kind === 'chat')
          send({
            ...head,
            choices: [{ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
          });
        let emitted = 0;
        let sent = 0;
        const emit = (run: Run, final: boolean) => {
          const { text, shown } = generatedText(run, ask);
          // U+FFFD: a character still being spelled in bytes
          const stable = final ? text.length : text.endsWith('\uFFFD') ? text.length - 1 : text.length - holdBack;
          const start = run.echo?.text.length ?? 0;
          let upTo = sent;
          if (final) upTo = shown;
          else while (upTo < run.outputIds.length && run.offsets.offsets[upTo]! < start + stable) upTo++;
          if (stable > emitted || upTo > sent) {
            send(chunk(run, text.slice(emitted, Math.max(emitted, stable)), sent, upTo, null));
            emitted = Math.max(emitted, stable);
            sent = upTo;
          }
        };
        const run = await target.queue.run(
          'openai',
          (slice) =>
            runPrompt(ids, ask, slice, {
              echoed: (r) => r.echo && send(chunk(r, r.echo.text, 0, 0, null, { echo: true })),
              token: (r) => emit(r, false),
            }),
          { signal },
        );
        emit(run, true);
        send(chunk(run, '', 0, 0, finishReason(run), { stop: !generatedText(run, ask).stopped }));
        runs.push(run);
      }
      if (includeUsage) send({ ...head, choices: [], usage: usageOf(runs, ask) });
    } catch (error) {
      const message = boundedMessage((error as Error).message);
      if ((error as Error).name !== 'AbortError')
        send({ error: { message, type: 'server_error', param: null, code: null } });
    }
    reply.raw.end('data: [DONE]\n\n');
  }
}

function completionId(ask: Ask): string {
  return `${ask.kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
}

const now = () => Math.floor(Date.now() / 1000);

function stopsOf(stop: string | string[] | null | undefined): string[] {
  return stop == null ? [] : Array.isArray(stop) ? stop.filter((s) => s.length > 0) : [stop];
}

function toChatMessage(message: ChatBody['messages'][number]): ChatMessage {
  const content =
    typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join('');
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
