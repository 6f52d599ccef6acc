// The service as a Fastify app factory (tests use app.inject(); server.ts listens). It owns the target, the
// episodes and their budgets; routes are plugins in routes/.
import { STATUS_CODES } from 'node:http';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { addApiSchemas } from './api/index.ts';
import { Authenticator, type Tokens } from './auth.ts';
import { EpisodeRegistry } from './episodes.ts';
import { IwiError, boundedMessage, describeValidation, errorReply, httpStatus, isIwiError } from './errors.ts';
import { episodeRoutes } from './routes/episodes.ts';
import { openaiRoutes } from './routes/openai.ts';
import type { Target } from './target.ts';
import { PACKAGE_VERSION } from '../core/version.ts';

export type AppOptions = {
  target: Target;
  outputDir: string;
  tokens: Tokens;
  logger?: FastifyServerOptions['logger'];
  /** Largest request body; inline operands of 65,536 numbers fit well within it. */
  bodyLimit?: number;
};

export const DEFAULT_BODY_LIMIT = 8 * 1024 * 1024; // 8 MiB

export async function buildApp(options: AppOptions): Promise<{ app: FastifyInstance; registry: EpisodeRegistry }> {
  const auth = new Authenticator(options.tokens);
  const registry = new EpisodeRegistry(options.target, options.outputDir);
  const restored = registry.restore();
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // Unknown fields are errors, never silently dropped; no type coercion: what the editor sends is what is checked.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: true, allErrors: false } },
  });
  addApiSchemas(app);
  app.decorateRequest('episode', null); // set by the episode routes (routes/episodes.ts)
  if (restored.restored > 0 || restored.leftovers > 0)
    app.log.info(restored, 'episodes restored from the output folder');

  // One error shape for every non-OpenAI route: {statusCode, code, error, message}, plus the budget on episode routes.
  app.setErrorHandler((error: FastifyError | IwiError, request, reply) => {
    let iwi: IwiError;
    if (isIwiError(error)) iwi = error;
    else if (error.validation) iwi = new IwiError('REQUEST_INVALID', describeValidation(error));
    else if (error.statusCode && error.statusCode < 500) {
      reply.code(error.statusCode).send({
        statusCode: error.statusCode,
        code: error.code ?? 'REQUEST_INVALID',
        error: STATUS_CODES[error.statusCode] ?? 'Error',
        message: boundedMessage(error.message),
      });
      return;
    } else {
      request.log.error(error);
      reply.code(500).send({
        statusCode: 500,
        code: 'INTERNAL',
        error: 'Internal Server Error',
        message: boundedMessage(error.message),
      });
      return;
    }
    const { episode } = request;
    reply.code(httpStatus(iwi)).send({ ...errorReply(iwi), ...(episode ? { budget: episode.ledger.state() } : {}) });
  });

  app.get('/health', async () => ({
    status: 'ok',
    model: options.target.modelId,
    revision: options.target.checkpoint.revision,
    device: options.target.device,
    precision: options.target.precision,
    package_version: PACKAGE_VERSION,
    episodes: registry.list().length,
    queue: options.target.queue.pending,
  }));
  expireLeases(app, options.target, registry);
  await app.register(episodeRoutes, { target: options.target, registry, auth });
  await app.register(openaiRoutes, { prefix: '/v1', target: options.target, registry, auth });
  return { app, registry };
}

/** How often the service looks for episodes whose lease ended. */
const LEASE_SWEEP_MS = 1000;

/**
 * Deletes every episode whose lease ended (its holder stopped renewing: a killed queue worker, a lost machine), as
 * DELETE /episodes/:id does, in the episode's turn of the execution queue; logged once each.
 */
function expireLeases(app: FastifyInstance, target: Target, registry: EpisodeRegistry): void {
  const expiring = new Set<string>();
  const sweep = () => {
    for (const episode of registry.expired()) {
      if (expiring.has(episode.id)) continue;
      expiring.add(episode.id);
      void target.queue
        .run(episode.id, async () => {
          if (episode.leaseEnds !== null && episode.leaseEnds < Date.now()) registry.delete(episode); // not renewed meanwhile
        })
        .then(
          () => episode.status === 'deleted' && app.log.info({ episode: episode.id }, 'episode deleted: lease expired'),
          (error: Error) => app.log.error({ episode: episode.id, err: error }, 'expiring a lease failed'),
        )
        .finally(() => expiring.delete(episode.id));
    }
  };
  const timer = setInterval(sweep, LEASE_SWEEP_MS);
  timer.unref();
  app.addHook('onClose', async () => clearInterval(timer));
}
