// Episode routes: create/list/get/delete (admin), brief and manifest (the episode's editor, or admin), turns,
// the four tools, and submit. Every weight mutation and inference runs in the target's one execution queue.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import {
  EpisodeBrief,
  EpisodeCreate,
  EpisodeCreated,
  EpisodeDeleted,
  EpisodeList,
  EpisodeParams,
  EpisodeSummary,
  ErrorReply,
  LeaseReply,
  ManifestQuery,
  ManifestReply,
  SubmitReply,
  TOOL_ARGS,
  TOOL_NAMES,
  ToolReply,
  TurnReply,
  ref,
  type ToolName,
} from '../api/index.ts';
import type { Authenticator } from '../auth.ts';
import { editorBrief } from '../brief.ts';
import { disconnectSignal } from '../disconnect.ts';
import type { EpisodeRegistry, EpisodeSession } from '../episodes.ts';
import { IwiError } from '../errors.ts';
import type { Slice } from '../queue.ts';
import type { Target } from '../target.ts';
import { inspectTarget } from '../tools/inspect-target.ts';
import { runTarget } from '../tools/run-target.ts';
import { parseRevert } from '../weights/index.ts';
import { PACKAGE_VERSION } from '../../core/version.ts';

export type EpisodeRoutesOptions = { target: Target; registry: EpisodeRegistry; auth: Authenticator };

/** Every episode route's error replies: one schema, by `$ref`. */
const errors = { '4xx': ref(ErrorReply), '5xx': ref(ErrorReply) };

declare module 'fastify' {
  interface FastifyRequest {
    /** The episode a request concerns, once its route has found it: the error handler reports its budget. */
    episode: EpisodeSession | null;
  }
}

export async function episodeRoutes(
  plain: FastifyInstance,
  { target, registry, auth }: EpisodeRoutesOptions,
): Promise<void> {
  const app = plain.withTypeProvider<TypeBoxTypeProvider>();
  const admin = {
    onRequest: async (request: FastifyRequest) => void auth.require(request.headers.authorization, ['admin']),
  };
  const editorOrAdmin = {
    onRequest: async (request: FastifyRequest) => void auth.require(request.headers.authorization, ['admin', 'editor']),
  };

  /** The episode of `:id`; an editor must also present that episode's key (X-Episode-Key), or gets 403 for any id. */
  const episodeOf = (request: FastifyRequest & { params: Static<typeof EpisodeParams> }): EpisodeSession => {
    const { id } = request.params;
    const key = request.headers['x-episode-key'];
    const editor = auth.roleOf(request.headers.authorization) === 'editor';
    const episode = editor ? registry.forEditor(id, typeof key === 'string' ? key : undefined) : registry.get(id);
    request.episode = episode;
    return episode;
  };
  const params = EpisodeParams;

  app.post(
    '/episodes',
    { ...admin, schema: { body: ref(EpisodeCreate), response: { 201: ref(EpisodeCreated), ...errors } } },
    async (request, reply) => {
      const spec = request.body;
      const vocabulary = target.checkpoint.config.vocab_size;
      const bad = spec.relevant_token_ids.find((id) => id >= vocabulary);
      if (bad !== undefined)
        throw new IwiError(
          'EPISODE_SPEC_INVALID',
          `relevant token id ${bad} is outside the vocabulary 0…${vocabulary - 1}`,
        );
      const { episode, key } = registry.create(spec);
      reply.code(201);
      return { id: episode.id, episode_key: key, budget: episode.ledger.state() };
    },
  );

  app.get('/episodes', { ...admin, schema: { response: { 200: ref(EpisodeList), ...errors } } }, async () => ({
    episodes: registry.list().map((e) => e.summary()),
  }));
  app.get(
    '/episodes/:id',
    { ...admin, schema: { params, response: { 200: ref(EpisodeSummary), ...errors } } },
    async (request) => episodeOf(request).summary(),
  );
  app.delete(
    '/episodes/:id',
    { ...admin, schema: { params, response: { 200: ref(EpisodeDeleted), ...errors } } },
    async (request, reply) => {
      const episode = episodeOf(request);
      await target.queue.run(episode.id, async () => registry.delete(episode), { signal: disconnectSignal(reply) });
      return { id: episode.id, status: episode.status };
    },
  );

  // A leased episode's holder says it is alive: another whole lease from now.
  app.post(
    '/episodes/:id/lease',
    { ...admin, schema: { params, response: { 200: ref(LeaseReply), ...errors } } },
    async (request) => {
      const episode = episodeOf(request);
      return { id: episode.id, lease: episode.renewLease() };
    },
  );

  app.get(
    '/episodes/:id/brief',
    { ...editorOrAdmin, schema: { params, response: { 200: ref(EpisodeBrief), ...errors } } },
    async (request) => editorBrief(target, episodeOf(request)),
  );

  const manifestSchema = { params, querystring: ManifestQuery, response: { 200: ref(ManifestReply), ...errors } };
  app.get('/episodes/:id/manifest', { ...editorOrAdmin, schema: manifestSchema }, async (request) => {
    episodeOf(request);
    const { query } = request;
    const tensors = target.store.manifest.filter({
      ...(query.name !== undefined ? { name: query.name } : {}),
      ...(query.layer !== undefined ? { layer: Number(query.layer) } : {}),
      ...(query.kind !== undefined ? { kind: query.kind } : {}),
      ...(query.writable !== undefined ? { writable: query.writable === 'true' } : {}),
    });
    return { count: tensors.length, tensors };
  });

  app.post(
    '/episodes/:id/turn',
    { ...editorOrAdmin, schema: { params, response: { 200: ref(TurnReply), ...errors } } },
    async (request, reply) => {
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
    },
  );

  for (const tool of TOOL_NAMES) {
    // The body schema is the tool's parameters as the editor sees them (service/tools/schemas.ts): the same object.
    const toolSchema = { params, body: TOOL_ARGS[tool], response: { 200: ref(ToolReply), ...errors } };
    app.post(`/episodes/:id/tools/${tool}`, { ...editorOrAdmin, schema: toolSchema }, async (request, reply) => {
      const episode = episodeOf(request);
      // A call whose client has gone leaves the queue if it has not started, or stops at its next slice (not charged).
      return target.queue.run(
        episode.id,
        async (slice) => {
          episode.requireActive();
          const result = await runTool(target, episode, { tool, body: request.body } as ToolCall, slice);
          episode.persist(tool === 'write_weights'); // a revert changes the live op count: make it durable
          return { tool, result, budget: episode.ledger.state() };
        },
        { signal: disconnectSignal(reply) },
      );
    });
  }

  app.post(
    '/episodes/:id/submit',
    { ...editorOrAdmin, schema: { params, response: { 200: ref(SubmitReply), ...errors } } },
    async (request, reply) => {
      const episode = episodeOf(request);
      return target.queue.run(
        episode.id,
        async () => {
          const patch = registry.submit(episode, {
            package: 'iwibench-ts',
            package_version: PACKAGE_VERSION,
            model: target.modelId,
            revision: target.checkpoint.revision,
          });
          return {
            id: episode.id,
            status: episode.status,
            patch,
            model: `${target.modelId}+patch:${patch.sha256}`,
            budget: episode.ledger.state(),
          };
        },
        { signal: disconnectSignal(reply) },
      );
    },
  );
}

/** A tool's name with its body, typed by the tool's schema. */
type ToolCall = { [T in ToolName]: { tool: T; body: Static<(typeof TOOL_ARGS)[T]> } }[ToolName];

/** One tool call, inside the queue: check the budget, do the work (which validates before it changes anything), charge. */
async function runTool(target: Target, episode: EpisodeSession, call: ToolCall, slice: Slice): Promise<unknown> {
  const { ledger, weights } = episode;
  const { tool } = call;
  switch (call.tool) {
    case 'read_weights': {
      ledger.check({ tool });
      const result = await weights.readInSlices(call.body, slice.between);
      ledger.charge({ tool });
      return result;
    }
    case 'write_weights': {
      ledger.check({ tool });
      if (call.body.op === 'revert') {
        const result = await weights.revertInSlices(parseRevert(call.body), slice.between);
        ledger.charge({ tool });
        return { op: 'revert', ...result };
      }
      const outcome = await weights.writeInSlices(call.body, slice.between);
      ledger.charge({ tool });
      episode.recordWrite(outcome);
      return outcome;
    }
    case 'run_target':
      return runTarget(target, episode.context, call.body, slice);
    case 'inspect_target':
      return inspectTarget(target, episode.context, call.body, slice);
  }
}
