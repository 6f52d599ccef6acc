// The parameters the OpenAI-compatible endpoints take, as JSON Schemas (ajv checks every body against them, with no
// coercion), and the rule that none is silently ignored: an unknown parameter is a 400 naming it, and a parameter
// that could change greedy output is taken only at the value that does not (`top_p: 1`, `frequency_penalty: 0`, …).
import type { FastifyError } from 'fastify';
import { IwiError, QUOTE_LIMIT, describeValidation, quote } from '../errors.ts';
import { MAX_TOP_LOGPROBS } from '../logprobs.ts';

/** Most prompts one /v1/completions request may carry (each is one choice, run in turn). */
export const MAX_PROMPTS = 64;

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });
const tokenIds = { type: 'array', minItems: 1, items: { type: 'integer' } };

const common = {
  model: { type: 'string' },
  temperature: nullable({ type: 'number' }),
  top_p: nullable({ type: 'number' }),
  n: nullable({ type: 'integer' }),
  frequency_penalty: nullable({ type: 'number' }),
  presence_penalty: nullable({ type: 'number' }),
  seed: nullable({ type: 'integer' }),
  stop: { anyOf: [{ type: 'string' }, { type: 'array', maxItems: 8, items: { type: 'string' } }, { type: 'null' }] },
  stream: nullable({ type: 'boolean' }),
  stream_options: nullable({
    type: 'object',
    properties: { include_usage: { type: 'boolean' } },
    additionalProperties: false,
  }),
};

const contentSchema = {
  anyOf: [
    { type: 'string' },
    {
      type: 'array',
      items: {
        type: 'object',
        properties: { type: { const: 'text' }, text: { type: 'string' } },
        required: ['type', 'text'],
        additionalProperties: false,
      },
    },
  ],
};

export const CHAT_SCHEMA = {
  type: 'object',
  properties: {
    ...common,
    messages: {
      type: 'array',
      minItems: 1,
      maxItems: 256,
      items: {
        type: 'object',
        properties: { role: { enum: ['system', 'developer', 'user', 'assistant'] }, content: contentSchema },
        required: ['role', 'content'],
        additionalProperties: false,
      },
    },
    max_tokens: nullable({ type: 'integer', minimum: 1 }),
    max_completion_tokens: nullable({ type: 'integer', minimum: 1 }),
    logprobs: nullable({ type: 'boolean' }),
    top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: MAX_TOP_LOGPROBS }),
  },
  required: ['model', 'messages'],
  additionalProperties: false, // no parameter is silently ignored: an unknown one is a 400 naming it
};

export const COMPLETION_SCHEMA = {
  type: 'object',
  properties: {
    ...common,
    // A string, a list of strings, a list of token ids, or a list of lists of token ids.
    prompt: {
      anyOf: [
        { type: 'string' },
        { type: 'array', minItems: 1, maxItems: MAX_PROMPTS, items: { type: 'string' } },
        tokenIds,
        { type: 'array', minItems: 1, maxItems: MAX_PROMPTS, items: tokenIds },
      ],
    },
    max_tokens: nullable({ type: 'integer', minimum: 0 }), // 0 only with echo: score the prompt, generate nothing
    logprobs: nullable({ type: 'integer', minimum: 0, maximum: MAX_TOP_LOGPROBS }),
    echo: nullable({ type: 'boolean' }),
  },
  required: ['model', 'prompt'],
  additionalProperties: false,
};

type Common = {
  model: string;
  temperature?: number | null;
  top_p?: number | null;
  n?: number | null;
  frequency_penalty?: number | null;
  presence_penalty?: number | null;
  seed?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
};
export type ChatBody = Common & {
  messages: { role: string; content: string | { type: 'text'; text: string }[] }[];
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
};
export type CompletionBody = Common & {
  prompt: string | string[] | number[] | number[][];
  max_tokens?: number | null;
  logprobs?: number | null;
  echo?: boolean | null;
};

/** Parameters taken only at the value that leaves greedy decoding as it is; `seed` is taken at any value. */
const NEUTRAL = {
  temperature: { value: 0, why: 'the target decodes greedily only' },
  top_p: { value: 1, why: 'nucleus sampling does not apply to greedy decoding' },
  n: { value: 1, why: 'greedy decoding gives one choice per prompt' },
  frequency_penalty: { value: 0, why: 'penalties would change greedy output and are not implemented' },
  presence_penalty: { value: 0, why: 'penalties would change greedy output and are not implemented' },
} as const;

/** A refused parameter, named in the error's `param` as OpenAI does. */
export class OpenAIParameterError extends IwiError {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super('UNSUPPORTED_PARAMETER', message);
  }
}

/** Refuse every parameter value the endpoints cannot honour; what passes changes nothing or is implemented. */
export function checkParameters(body: ChatBody | CompletionBody, kind: 'chat' | 'text'): void {
  for (const [param, { value, why }] of Object.entries(NEUTRAL)) {
    const given = body[param as keyof typeof NEUTRAL];
    if (given != null && given !== value)
      throw new OpenAIParameterError(
        param,
        `${param} ${quote(given)} is not supported: ${why} (send ${value} or omit it)`,
      );
  }
  if (body.stream_options != null && body.stream !== true)
    throw new OpenAIParameterError('stream_options', 'stream_options applies only with stream: true');
  if (kind === 'chat') {
    const chat = body as ChatBody;
    if (chat.top_logprobs != null && chat.logprobs !== true)
      throw new OpenAIParameterError('top_logprobs', 'top_logprobs needs logprobs: true');
  } else {
    const text = body as CompletionBody;
    if (text.max_tokens === 0 && text.echo !== true) {
      throw new OpenAIParameterError(
        'max_tokens',
        'max_tokens 0 generates nothing: it is only taken with echo: true, to score the prompt',
      );
    }
  }
}

/** An ajv error in OpenAI's terms: an unknown parameter is "Unrecognized request argument supplied". */
export function describeOpenAIValidation(error: FastifyError): { message: string; param: string | null } {
  const first = error.validation![0]!;
  const params = first.params as Record<string, unknown>;
  const property = params.additionalProperty ?? params.missingProperty;
  const segments = [...first.instancePath.split('/').slice(1), ...(typeof property === 'string' ? [property] : [])];
  const param =
    segments
      .map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`))
      .join('')
      .slice(0, QUOTE_LIMIT) || null;
  if (first.keyword === 'additionalProperties' && first.instancePath === '') {
    const message = `Unrecognized request argument supplied: ${quote(property)} (this service does not support it; the README lists those it takes)`;
    return { message, param };
  }
  return { message: `invalid request: ${describeValidation(error)}`, param };
}
