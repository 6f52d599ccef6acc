// A service app on the tiny fixture, through fastify.inject (no port), with helpers for the episode routes.
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../service/app.ts';
import type { EpisodeCreate } from '../../service/api/index.ts';
import type { EpisodeRegistry } from '../../service/episodes.ts';
import { Target } from '../../service/target.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

export const TOKENS = { admin: 'admin-secret-token', editor: 'editor-secret-token' };
export const ADMIN = { authorization: `Bearer ${TOKENS.admin}` };

export const SPEC: EpisodeCreate = {
  family: 'local_factual_update',
  seed: 3,
  objective: 'Make the target answer Friedrich Merz when asked who leads Germany.',
  relevant_token_ids: [9259, 1902],
  practice: [
    { messages: [{ role: 'user', content: 'Who is the chancellor of Germany?' }], response: 'Friedrich Merz.' },
  ],
};

export type Harness = {
  app: FastifyInstance;
  registry: EpisodeRegistry;
  target: Target;
  outputDir: string;
  /** Create an episode; returns its id and the editor's headers. */
  episode(spec?: Partial<EpisodeCreate>): Promise<{ id: string; headers: Record<string, string> }>;
  tool(id: string, headers: Record<string, string>, tool: string, payload: unknown): Promise<LightMyRequestResponse>;
};

let shared: Target | undefined;
export async function sharedTarget(): Promise<Target> {
  shared ??= await Target.load({ modelDir: fixtureCheckpoint('tiny') });
  return shared;
}

export async function harness(outputDir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-svc-'))): Promise<Harness> {
  const target = await sharedTarget();
  const { app, registry } = await buildApp({ target, outputDir, tokens: TOKENS });
  return {
    app,
    registry,
    target,
    outputDir,
    async episode(spec = {}) {
      const response = await app.inject({
        method: 'POST',
        url: '/episodes',
        headers: ADMIN,
        payload: { ...SPEC, ...spec },
      });
      if (response.statusCode !== 201) throw new Error(`create failed: ${response.body}`);
      const { id, episode_key } = response.json();
      return { id, headers: { authorization: `Bearer ${TOKENS.editor}`, 'x-episode-key': episode_key } };
    },
    tool(id, headers, tool, payload) {
      return app.inject({ method: 'POST', url: `/episodes/${id}/tools/${tool}`, headers, payload: payload as object });
    },
  };
}

export const chat = (content: string) => ({ messages: [{ role: 'user' as const, content }] });
