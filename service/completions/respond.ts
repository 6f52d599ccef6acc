// An OpenAI-compatible request answered: every prompt run in turn through the target's one execution queue (one
// prompt a job), then the whole response (`respond`) or server-sent events as the tokens come (`stream`).
import type { FastifyReply } from 'fastify';
import { disconnectSignal } from '../disconnect.ts';
import { boundedMessage } from '../errors.ts';
import type { Target } from '../target.ts';
import type { Ask } from './ask.ts';
import { finishReason, generatedText, runPrompt, type Run } from './run.ts';
import { chatLogprobs, completionId, legacyLogprobs, now, usageOf } from './shape.ts';

/** The whole response: one choice per prompt. */
export async function respond(target: Target, reply: FastifyReply, ask: Ask, prompts: number[][]) {
  const { tokenizer } = target;
  const signal = disconnectSignal(reply);
  const runs: Run[] = [];
  for (const ids of prompts)
    runs.push(await target.queue.run('openai', (slice) => runPrompt(target, ids, ask, slice), { signal }));
  const choices = runs.map((run, index) => {
    const generated = generatedText(target, run, ask);
    if (ask.kind === 'chat') {
      const tokens = run.generated?.tokens.slice(0, generated.shown) ?? [];
      return {
        index,
        message: { role: 'assistant', content: generated.text },
        logprobs: ask.topK === null ? null : chatLogprobs(tokenizer, tokens),
        finish_reason: finishReason(run),
      };
    }
    const logprobs =
      ask.topK === null
        ? null
        : legacyLogprobs(tokenizer, run, { echo: true, to: generated.shown, stop: !generated.stopped });
    return { index, text: (run.echo?.text ?? '') + generated.text, logprobs, finish_reason: finishReason(run) };
  });
  const object = ask.kind === 'chat' ? 'chat.completion' : 'text_completion';
  return { id: completionId(ask), object, created: now(), model: ask.model, choices, usage: usageOf(runs, ask) };
}

/**
 * Server-sent events: per prompt, one chunk per stable piece of text, with the log-probabilities of the tokens it
 * starts. Text that could be the start of a stop string is held back until it is known not to be one.
 */
export async function stream(
  target: Target,
  reply: FastifyReply,
  ask: Ask,
  prompts: number[][],
  includeUsage: boolean,
): Promise<void> {
  const { tokenizer } = target;
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
            ask.topK === null || to === from ? null : chatLogprobs(tokenizer, run.generated!.tokens.slice(from, to));
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
        const logprobs = ask.topK === null ? null : legacyLogprobs(tokenizer, run, { ...extra, from, to });
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
        const { text, shown } = generatedText(target, run, ask);
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
          runPrompt(target, ids, ask, slice, {
            echoed: (r) => r.echo && send(chunk(r, r.echo.text, 0, 0, null, { echo: true })),
            token: (r) => emit(r, false),
          }),
        { signal },
      );
      emit(run, true);
      send(chunk(run, '', 0, 0, finishReason(run), { stop: !generatedText(target, run, ask).stopped }));
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
