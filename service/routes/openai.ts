// OpenAI-compatible endpoints (admin token): /v1/models, /v1/chat/completions and /v1/completions, plain and
// streamed. They serve the pristine target (`model: "<id>"`) or a submitted patch (`"<id>+patch:<sha256>"`), decoding
// greedily, so any OpenAI client (the MMLU-Pro runner, lm-evaluation-harness) can measure an edited model: prompts as
// text or token ids, `echo`, legacy `logprobs` and chat `logprobs`/`top_logprobs` (service/logprobs.ts). The
// parameters, what a request asks and how it is answered: service/completions/. They charge no episode's budget, but
// every run goes through the one execution queue, one prompt a job. Errors use OpenAI's error shape.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth.ts';
import { chatAsk, servedModels, textAsk } from '../completions/ask.ts';
import { respond, stream } from '../completions/respond.ts';
import type { EpisodeRegistry } from '../episodes.ts';
import { IwiError, boundedMessage, httpStatus, isIwiError } from '../errors.ts';
import type { Target } from '../target.ts';
import {
  CHAT_SCHEMA,
  COMPLETION_SCHEMA,
  OpenAIParameterError,
  checkParameters,
  describeOpenAIValidation,
  type ChatBody,
  type CompletionBody,
} from '../completions/params.ts';

export type OpenAIRoutesOptions = { target: Target; registry: EpisodeRegistry; auth: Authenticator };

export async function openaiRoutes(
  app: FastifyInstance,
  { target, registry, auth }: OpenAIRoutesOptions,
): Promise<void> {
  app.addHook('onRequest', async (request) => void auth.require(request.headers.authorization, ['admin']));
  app.setErrorHandler(openaiErrorReply);

  app.get('/models', async () => ({
    object: 'list',
    data: servedModels(target, registry).map((id) => ({ id, object: 'model', created: 0, owned_by: 'iwibench' })),
  }));

  app.post('/chat/completions', { schema: { body: CHAT_SCHEMA } }, async (request, reply) => {
    const body = request.body as ChatBody;
    checkParameters(body, 'chat');
    const { ask, prompts } = chatAsk(target, registry, body);
    return body.stream
      ? stream(target, reply, ask, prompts, body.stream_options?.include_usage === true)
      : respond(target, reply, ask, prompts);
  });

  app.post('/completions', { schema: { body: COMPLETION_SCHEMA } }, async (request, reply) => {
    const body = request.body as CompletionBody;
    checkParameters(body, 'text');
    const { ask, prompts } = textAsk(target, registry, body);
    return body.stream
      ? stream(target, reply, ask, prompts, body.stream_options?.include_usage === true)
      : respond(target, reply, ask, prompts);
  });
}

/** OpenAI's error shape: {error: {message, type, param, code}}, the type by status. */
function openaiErrorReply(error: FastifyError | IwiError, request: FastifyRequest, reply: FastifyReply) {
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
}
