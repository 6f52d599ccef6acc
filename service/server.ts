// Start the service: load the target, build the app, listen. Used by `npx iwibench service` and by tests that need a
// real process (kill and restart).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { tokensFromEnv } from './auth.ts';
import { writeJsonAtomic } from '../core/files.ts';
import type { CheckpointLocation, Device, Precision } from '../engine/index.ts';
import { Target } from './target.ts';
import { PACKAGE_VERSION } from '../core/version.ts';

export type ServiceOptions = CheckpointLocation & {
  outputDir: string;
  host: string;
  port: number;
  device?: Device;
  precision?: Precision;
  threads?: number;
  callTimeLimitSeconds?: number;
  logLevel?: string;
  args?: Record<string, unknown>;
};

export async function startService(
  options: ServiceOptions,
): Promise<{ app: FastifyInstance; url: string; target: Target }> {
  const tokens = tokensFromEnv(); // refuses to start without two distinct tokens
  mkdirSync(options.outputDir, { recursive: true });
  const target = await Target.load(options, {
    device: options.device,
    precision: options.precision,
    threads: options.threads,
    callTimeLimitSeconds: options.callTimeLimitSeconds,
  });
  // Logs go to stderr (stdout carries the one JSON line a parent process reads); pino redacts nothing we log:
  // Fastify's request serializer has no headers and no bodies.
  const logger = { level: options.logLevel ?? 'info', stream: process.stderr };
  const { app } = await buildApp({ target, outputDir: options.outputDir, tokens, logger });
  app.addHook('onClose', async () => target.close());
  const url = await app.listen({ host: options.host, port: options.port });
  writeJsonAtomic(path.join(options.outputDir, 'service.json'), {
    package_version: PACKAGE_VERSION,
    model: target.modelId,
    revision: target.checkpoint.revision,
    url,
    started_at: new Date().toISOString(),
    args: options.args ?? {},
  });
  return { app, url, target };
}
