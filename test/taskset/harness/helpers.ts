// A real service app on the tiny fixture, listening on 127.0.0.1 (ephemeral port), reached through the taskset's
// service client exactly as a pilot reaches it; and readers for an attempt's trace files.
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../../service/app.ts';
import { AdminClient, type EditorClient, type EpisodeCreate } from '../../../taskset/service-client.ts';
import { SPEC, sharedTarget, TOKENS } from '../../service/helpers.ts';

export { SPEC };

/** A tensor of the tiny fixture: [hidden 64, intermediate 128]. */
export const DOWN = 'model.layers.0.mlp.down_proj.weight';

export type TestService = {
  app: FastifyInstance;
  admin: AdminClient;
  episode(spec?: Partial<EpisodeCreate>): Promise<EditorClient>;
  close(): Promise<void>;
};

export async function startService(): Promise<TestService> {
  const target = await sharedTarget();
  const { app } = await buildApp({
    target,
    outputDir: mkdtempSync(path.join(os.tmpdir(), 'iwibench-harness-svc-')),
    tokens: TOKENS,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const admin = new AdminClient(url, TOKENS.admin);
  return {
    app,
    admin,
    episode: (spec = {}) => admin.createEpisode({ ...SPEC, ...spec }, TOKENS.editor),
    close: () => app.close(),
  };
}

/** A fresh folder for one attempt's trace. */
export function traceDir(name: string): string {
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-harness-')), name);
}

export function readTrace(dir: string): any[] {
  return readFileSync(path.join(dir, 'trace.jsonl'), 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line));
}

export function readSummary(dir: string): any {
  return JSON.parse(readFileSync(path.join(dir, 'editor.json'), 'utf8'));
}

/** How many trace lines of each type. */
export function lineTypes(lines: { type: string }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { type } of lines) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}
