// The one place that talks to the `openai` SDK. Requests carry the original's parameters and nothing else
// (run_openai.py get_chat_completion / get_completion: model, temperature, max_tokens, top_p, stop as the config gives
// it, frequency_penalty 0, presence_penalty 0); "Question:" is added to stop only with stop_at_question. Failures are sorted by the SDK's error classes, never by message text:
// - per question (reported, not scored, asked again by the next run): timeouts, HTTP errors left after the retries
//   (429, 5xx, a 400 for one over-long prompt), a response without text (where the original's .strip() raises);
// - fatal (the run stops, answers so far are kept): the server cannot be reached, or refuses us (401, 403, 404).
import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  AuthenticationError,
  NotFoundError,
  OpenAIError,
  PermissionDeniedError,
} from 'openai';
import type { MmluProConfig } from './config.ts';
import type { Prompt } from './prompts.ts';
import { pyStrip } from './python.ts';

/** What stop_at_question adds: where a model starts inventing the next question. */
export const STOP_AT_NEXT_QUESTION = 'Question:';

export type Usage = { prompt_tokens: number; completion_tokens: number };

export type RequestFailure = { kind: 'timeout' | 'http' | 'bad_response'; status: number | null; message: string };

export type CompletionResult = { ok: true; text: string; usage: Usage | null } | { ok: false; failure: RequestFailure };

/** A failure that every further request would repeat: stop the run. */
export class FatalServerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FatalServerError';
  }
}

export type CompletionClient = { complete(prompt: Prompt): Promise<CompletionResult> };

export function createCompletionClient(settings: Pick<MmluProConfig, 'server' | 'inference'>): CompletionClient {
  const { server, inference } = settings;
  const client = new OpenAI({
    baseURL: server.url,
    apiKey: server.api_key,
    // Per attempt, in ms. The SDK's default is 10 minutes; ours comes from [server] timeout (600 s by default).
    timeout: Math.max(1, Math.round(server.timeout * 1000)),
    // The SDK retries 408/409/429/5xx, timeouts and connection errors with backoff 0.5 s doubling to 8 s
    // (or the server's retry-after), and gives up after this many retries. Its default is 2; ours is [server] max_retries.
    maxRetries: server.max_retries,
  });
  const sampling = {
    model: server.model,
    temperature: inference.temperature,
    top_p: inference.top_p,
    max_tokens: inference.max_tokens,
    frequency_penalty: 0,
    presence_penalty: 0,
    stop: inference.stop_at_question
      ? [...new Set([STOP_AT_NEXT_QUESTION, ...[inference.stop].flat()])]
      : Array.isArray(inference.stop)
        ? [...inference.stop]
        : inference.stop,
  };

  async function complete(prompt: Prompt): Promise<CompletionResult> {
    try {
      if (prompt.kind === 'chat') {
        const response = await client.chat.completions.create({ ...sampling, messages: prompt.messages });
        const choice = response.choices?.[0];
        const content = choice?.message?.content;
        if (typeof content !== 'string') return badResponse('no text in the chat completion');
        return { ok: true, text: pyStrip(content), usage: usageOf(response.usage) };
      }
      const response = await client.completions.create({ ...sampling, prompt: prompt.text });
      const choice = response.choices?.[0];
      if (!choice || typeof choice.text !== 'string') return badResponse('no text in the completion');
      return { ok: true, text: pyStrip(choice.text), usage: usageOf(response.usage) };
    } catch (error) {
      return failureOf(error, server.url);
    }
  }
  return { complete };
}

function failureOf(error: unknown, url: string): CompletionResult {
  // Order matters: the timeout class extends the connection class, which extends APIError.
  if (error instanceof APIConnectionTimeoutError)
    return { ok: false, failure: { kind: 'timeout', status: null, message: 'request timed out' } };
  if (error instanceof APIConnectionError)
    throw new FatalServerError(`cannot reach ${url}: ${error.message}`, { cause: error });
  if (
    error instanceof AuthenticationError ||
    error instanceof PermissionDeniedError ||
    error instanceof NotFoundError
  ) {
    throw new FatalServerError(`${url} refused the request (${error.status}): ${error.message}`, { cause: error });
  }
  if (error instanceof APIError)
    return { ok: false, failure: { kind: 'http', status: error.status ?? null, message: error.message } };
  if (error instanceof OpenAIError || error instanceof SyntaxError) return badResponse(error.message);
  throw error;
}

function badResponse(message: string): CompletionResult {
  return { ok: false, failure: { kind: 'bad_response', status: null, message } };
}

function usageOf(usage: { prompt_tokens?: number; completion_tokens?: number } | undefined | null): Usage | null {
  if (!usage || typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number') return null;
  return { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens };
}
