// The service's HTTP contract, once: the routes validate and serialise with these schemas, the editor's tool
// definitions carry the tool bodies, and taskset/service-client.ts takes its types from them (docs/service.md).
import type { FastifyInstance } from 'fastify';
import { BudgetState, ErrorReply } from './common.ts';
import {
  EpisodeBrief,
  EpisodeCreate,
  EpisodeCreated,
  EpisodeDeleted,
  EpisodeLease,
  EpisodeList,
  EpisodeSummary,
  LeaseReply,
  ManifestReply,
  SubmitReply,
  TurnReply,
} from './episodes.ts';
import { ToolReply } from './tools.ts';

export * from './address.ts';
export * from './common.ts';
export * from './episodes.ts';
export * from './limits.ts';
export * from './tools.ts';

/** The schemas routes reach by `$ref`, each under its `$id`. */
export const SHARED_SCHEMAS = [
  BudgetState,
  ErrorReply,
  EpisodeCreate,
  EpisodeCreated,
  EpisodeLease,
  EpisodeSummary,
  EpisodeList,
  EpisodeDeleted,
  LeaseReply,
  EpisodeBrief,
  ManifestReply,
  TurnReply,
  SubmitReply,
  ToolReply,
];

export function addApiSchemas(app: FastifyInstance): void {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
}
