// Episode routes: create/list/get/delete (admin), brief and manifest (the episode's editor, or admin), turns,
// the four tools, and submit. Every weight mutation and inference runs in the target's one execution queue.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Authenticator } from '../auth.ts';
import { editorBrief } from '../brief.ts';
import { DEFAULT_BUDGETS } from '../budgets.ts';
import { disconnectSignal } from '../disconnect.ts';
import type { EpisodeRegistry, EpisodeSpec, ServiceEpisode } from '../episodes.ts';
import { IwiError } from '../errors.ts';
import type { Slice } from '../queue.ts';
import type { Target } from '../target.ts';
import { inspectTarget, type InspectTargetArgs } from '../tools/inspect-target.ts';
import { runTarget, type RunTargetArgs } from '../tools/run-target.ts';
import { TOOL_DEFINITIONS, type ToolName } from '../tools/schemas.ts';
import { TENSOR_KINDS, type TensorKind } from '../weights/manifest.ts';
import { PACKAGE_VERSION } from '../../core/version.ts';

export type EpisodeRoutesOptions = { target: Target; registry: EpisodeRegistry; auth: Authenticator };

const chatMessage = {
  type: 'object',
  properties: { role: { enum: ['system', 'user', 'assistant'] }, content: { type: 'string' } },
  required: ['role', 'content'],
  additionalProperties: false,
};

export const EPISODE_SPEC_SCHEMA = {
  type: 'object',
  properties: {
    family: { type: 'string', minLength: 1, maxLength: 64 },
    seed: { type: 'integer', minimum: 0 },
    objective: {
      anyOf: [
        { type: 'string', minLength: 1, maxLength: 20_000 },
        { type: 'object', properties: { text: { type: 'string', minLength: 1, maxLength: 20_000 }, structured: {} }, required: ['text'], additionalProperties: false },
      ],
    },
    relevant_token_ids: { type: 'array', maxItems: 256, items: { type: 'integer', minimum: 0 } },
    practice: {
      type: 'array',
      maxItems: 64,
      items: {
        type: 'object',
        properties: { messages: { type: 'array', minItems: 1, maxItems: 32, items: chatMessage }, response: { type: 'string' }, note: { type: 'string' } },
        required: ['messages', 'response'],
        additionalProperties: false,
      },
    },
    // Named budgets only: an allow-list, so a key such as `toString` is refused like any unknown one.
    budgets: {
      type: 'object',
      properties: Object.fromEntries(Object.keys(DEFAULT_BUDGETS).map((k) => [k, { type: 'integer', minimum: 0 }])),
      additionalProperties: false,
    },
    label: { type: 'string', maxLength: 200 },
  },
  required: ['family', 'seed', 'objective', 'relevant_token_ids', 'practice'],
  additionalProperties: false,
} as const;

const idParams = { type: 'object', properties: { id: { type: 'string', maxLength: 64 } }, required: ['id'] } as const;

/** The episode a request concerns, for the error handler (it reports the budget with every tool error). */
export const requestEpisodes = new WeakMap<FastifyRequest, ServiceEpisode>();

export async function episodeRoutes(app: FastifyInstance, { target, registry, auth }: EpisodeRoutesOptions): Promise<void> {
  const admin = { onRequest: async (request: FastifyRequest) => void auth.require(request.headers.authorization, ['admin']) };
  const editorOrAdmin = { onRequest: async (request: FastifyRequest) => void auth.require(request.headers.authorization, ['admin', 'editor']) };

  /** The episode of `:id`; an editor must also present that episode's key (X-Episode-Key), or gets 403 for any id. */
  const episodeOf = (request: FastifyRequest): ServiceEpisode => {
    const id = (request.params as { id: string }).id;
    const key = request.headers['x-episode-key'];
    const editor = auth.roleOf(request.headers.authorization) === 'editor';
    const episode = editor ? registry.forEditor(id, typeof key === 'string' ? key : undefined) : registry.get(id);
    requestEpisodes.set(request, episode);
    return episode;
  };

  app.post('/episodes', { ...admin, schema: { body: EPISODE_SPEC_SCHEMA } }, async (request, reply) => {
    const spec = request.body as EpisodeSpec;
    const vocabulary = target.checkpoint.config.vocab_size;
    const bad = spec.relevant_token_ids.find((id) => id >= vocabulary);
    if (bad !== undefined) throw new IwiError('EPISODE_SPEC_INVALID', `relevant token id ${bad} is outside the vocabulary 0…${vocabulary - 1}`);
    const { episode, key } = registry.create(spec);
    reply.code(201);
    return { id: episode.id, episode_key: key, budget: episode.ledger.state() };
  });

  app.get('/episodes', admin, async () => ({ episodes: registry.list().map((e) => e.summary()) }));
  app.get('/episodes/:id', { ...admin, schema: { params: idParams } }, async (request) => episodeOf(request).summary());
  app.delete('/episodes/:id', { ...admin, schema: { params: idParams } }, async (request, reply) => {
    const episode = episodeOf(request);
    await target.queue.run(episode.id, async () => registry.delete(episode), { signal: disconnectSignal(reply) });
    return { id: episode.id, status: episode.status };
  });

  app.get('/episodes/:id/brief', { ...editorOrAdmin, schema: { params: idParams } }, async (request) => editorBrief(target, episodeOf(request)));

  app.get(
    '/episodes/:id/manifest',
    {
      ...editorOrAdmin,
      schema: {
        params: idParams,
        querystring: { type: 'object', properties: { name: { type: 'string' }, layer: { type: 'string', pattern: '^\\d+$' }, kind: { enum: [...TENSOR_KINDS] }, writable: { enum: ['true', 'false'] } }, additionalProperties: false },
      },
    },
    async (request) => {
      episodeOf(request);
      const query = request.query as { name?: string; layer?: string; kind?: TensorKind; writable?: 'true' | 'false' };
      const tensors = target.store.manifest.filter({
        ...(query.name !== undefined ? { name: query.name } : {}),
        ...(query.layer !== undefined ? { layer: Number(query.layer) } : {}),
        ...(query.kind !== undefined ? { kind: query.kind } : {}),
        ...(query.writable !== undefined ? { writable: query.writable === 'true' } : {}),
      });
      return { count: tensors.length, tensors };
    },
  );

  app.post('/episodes/:id/turn', { ...editorOrAdmin, schema: { params: idParams } }, async (request, reply) => {
    const episode = episodeOf(request);
    return target.queue.run(
      episode.id,
      async () => {
        episode.requireActive();
        episode.ledger.turn();
        episode.persist();
        return { budget: episode.ledger.state() };
      },
      { signal: disconnectSignal(reply) },
    );
  });

  for (const tool of TOOL_DEFINITIONS) {
    app.post(`/episodes/:id/tools/${tool.name}`, { ...editorOrAdmin, schema: { params: idParams, body: tool.parameters } }, async (request, reply) => {
      const episode = episodeOf(request);
      // A call whose client has gone leaves the queue if it has not started, or stops at its next slice (not charged).
      return target.queue.run(
        episode.id,
        async (slice) => {
          episode.requireActive();
          const result = await runTool(target, episode, tool.name, request.body as Record<string, unknown>, slice);
          episode.persist(tool.name === 'write_weights'); // a revert changes the live op count: make it durable
          return { tool: tool.name, result, budget: episode.ledger.state() };
        },
        { signal: disconnectSignal(reply) },
      );
    });
  }

  app.post('/episodes/:id/submit', { ...editorOrAdmin, schema: { params: idParams } }, async (request, reply) => {
    const episode = episodeOf(request);
    return target.queue.run(
      episode.id,
      async () => {
        const patch = registry.submit(episode, { package: 'iwibench-ts', package_version: PACKAGE_VERSION, model: target.modelId, revision: target.checkpoint.revision });
        return { id: episode.id, status: episode.status, patch, model: `${target.modelId}+patch:${patch.sha256}`, budget: episode.ledger.state() };
      },
      { signal: disconnectSignal(reply) },
    );
  });
}

/** One tool call, inside the queue: check the budget, do the work (which validates before it changes anything), charge. */
async function runTool(target: Target, episode: ServiceEpisode, tool: ToolName, body: Record<string, unknown>, slice: Slice): Promise<unknown> {
  const { ledger, weights } = episode;
  switch (tool) {
    case 'read_weights': {
      ledger.check({ tool });
      const result = weights.read(body);
      ledger.charge({ tool });
      return result;
    }
    case 'write_weights': {
      ledger.check({ tool });
      if (body.op === 'revert') {
        const extra = Object.keys(body).filter((k) => k !== 'op' && k !== 'to_op_count');
        if (extra.length > 0) throw new IwiError('OP_INVALID', `revert: unknown field(s) ${extra.join(', ')} (fields: to_op_count)`);
        const result = weights.revert((body.to_op_count as number | undefined) ?? 0);
        ledger.charge({ tool });
        return { op: 'revert', ...result };
      }
      const outcome = weights.write(body);
      ledger.charge({ tool });
      episode.recordWrite(outcome);
      return outcome;
    }
    case 'run_target':
      return runTarget(target, episode.context, body as RunTargetArgs, slice);
    case 'inspect_target':
      return inspectTarget(target, episode.context, body as InspectTargetArgs, slice);
  }
}
