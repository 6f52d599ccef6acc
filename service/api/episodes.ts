// The episode routes' bodies: what the taskset sends to create an episode (only what the editor may see, plus
// budgets; never a grading input), the brief the editor reads, and the replies of the admin and editor routes.
import Type, { type Static, type TInteger, type TOptional } from 'typebox';
import { TENSOR_KINDS } from '../../engine/index.ts';
import { BudgetState, ChatMessage, ref } from './common.ts';
import { DEFAULT_BUDGETS, type BudgetName } from './limits.ts';
import { ToolDefinition } from './tools.ts';

const Objective = Type.Union([
  Type.String({ minLength: 1, maxLength: 20_000 }),
  Type.Object(
    { text: Type.String({ minLength: 1, maxLength: 20_000 }), structured: Type.Optional(Type.Unknown()) },
    { additionalProperties: false },
  ),
]);

const PracticeExample = Type.Object(
  {
    messages: Type.Array(ChatMessage, { minItems: 1, maxItems: 32 }),
    response: Type.String(),
    note: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

// Named budgets only: an allow-list, so a key such as `toString` is refused like any unknown one.
const budgetFields = Object.fromEntries(
  Object.keys(DEFAULT_BUDGETS).map((name) => [name, Type.Optional(Type.Integer({ minimum: 0 }))]),
);
const BudgetOverrides = Type.Object(budgetFields as Record<BudgetName, TOptional<TInteger>>, {
  additionalProperties: false,
});

/** The longest lease an episode may be created with: a day. */
export const MAX_LEASE_SECONDS = 86_400;

/** An episode's lease: its length and when it ends unless renewed. */
export const EpisodeLease = Type.Object(
  { seconds: Type.Integer(), expires_at: Type.String() },
  { $id: 'EpisodeLease', additionalProperties: false },
);
export type EpisodeLease = Static<typeof EpisodeLease>;

/** POST /episodes: the episode the taskset asks for. */
export const EpisodeCreate = Type.Object(
  {
    family: Type.String({ minLength: 1, maxLength: 64 }),
    seed: Type.Integer({ minimum: 0 }),
    objective: Objective,
    relevant_token_ids: Type.Array(Type.Integer({ minimum: 0 }), { maxItems: 256 }),
    practice: Type.Array(PracticeExample, { maxItems: 64 }),
    budgets: Type.Optional(BudgetOverrides),
    label: Type.Optional(Type.String({ maxLength: 200 })),
    /**
     * The episode is deleted once this many seconds pass without POST /episodes/:id/lease (a queue worker's: its
     * episode goes even if the worker is killed); absent, it lives until DELETE.
     */
    lease_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LEASE_SECONDS })),
  },
  { $id: 'EpisodeCreate', additionalProperties: false },
);
export type EpisodeCreate = Static<typeof EpisodeCreate>;

export const EpisodeCreated = Type.Object(
  { id: Type.String(), episode_key: Type.String(), budget: ref(BudgetState) },
  { $id: 'EpisodeCreated', additionalProperties: false },
);
export type EpisodeCreated = Static<typeof EpisodeCreated>;

/** A submitted episode's patch folder and digest. */
export const SubmittedPatch = Type.Object(
  { dir: Type.String(), sha256: Type.String(), changed_parameters: Type.Integer(), ops: Type.Integer() },
  { additionalProperties: false },
);
export type SubmittedPatch = Static<typeof SubmittedPatch>;

const EpisodeStatus = Type.Enum(['active', 'submitted', 'deleted']);
export type EpisodeStatus = Static<typeof EpisodeStatus>;

/** GET /episodes/:id, and each of GET /episodes. */
export const EpisodeSummary = Type.Object(
  {
    id: Type.String(),
    family: Type.String(),
    seed: Type.Integer(),
    label: Type.Union([Type.String(), Type.Null()]),
    status: EpisodeStatus,
    op_count: Type.Integer(),
    touched_tensors: Type.Array(Type.String()),
    budget: ref(BudgetState),
    patch: Type.Union([SubmittedPatch, Type.Null()]),
    created_at: Type.String(),
    lease: Type.Union([ref(EpisodeLease), Type.Null()]),
  },
  { $id: 'EpisodeSummary', additionalProperties: false },
);
export type EpisodeSummary = Static<typeof EpisodeSummary>;

export const EpisodeList = Type.Object(
  { episodes: Type.Array(ref(EpisodeSummary)) },
  { $id: 'EpisodeList', additionalProperties: false },
);

export const EpisodeDeleted = Type.Object(
  { id: Type.String(), status: EpisodeStatus },
  { $id: 'EpisodeDeleted', additionalProperties: false },
);

export const LeaseReply = Type.Object(
  { id: Type.String(), lease: ref(EpisodeLease) },
  { $id: 'LeaseReply', additionalProperties: false },
);
export type LeaseReply = Static<typeof LeaseReply>;

export const TurnReply = Type.Object({ budget: ref(BudgetState) }, { $id: 'TurnReply', additionalProperties: false });

export const SubmitReply = Type.Object(
  { id: Type.String(), status: EpisodeStatus, patch: SubmittedPatch, model: Type.String(), budget: ref(BudgetState) },
  { $id: 'SubmitReply', additionalProperties: false },
);
export type SubmitReply = Static<typeof SubmitReply>;

/** GET /episodes/:id/brief: everything the editor is told. */
export const EpisodeBrief = Type.Object(
  {
    episode_id: Type.String(),
    family: Type.String(),
    seed: Type.Integer(),
    objective: Objective,
    target: Type.Object(
      {
        model: Type.String(),
        revision: Type.String(),
        layers: Type.Integer(),
        hidden_size: Type.Integer(),
        layer_types: Type.Array(Type.String()),
        chat_template: Type.String(),
      },
      { additionalProperties: false },
    ),
    manifest: Type.Array(Type.String()),
    relevant_tokens: Type.Array(
      Type.Object(
        { id: Type.Integer(), token: Type.Union([Type.String(), Type.Null()]) },
        { additionalProperties: false },
      ),
    ),
    practice: Type.Array(PracticeExample),
    budget: ref(BudgetState),
    limits: Type.Record(Type.String(), Type.Number()),
    tools: Type.Array(ToolDefinition),
  },
  { $id: 'EpisodeBrief', additionalProperties: false },
);
export type EpisodeBrief = Static<typeof EpisodeBrief>;

export const EpisodeParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** GET /episodes/:id/manifest's query: the manifest filter, as strings. */
export const ManifestQuery = Type.Object(
  {
    name: Type.Optional(Type.String()),
    layer: Type.Optional(Type.String({ pattern: '^\\d+$' })),
    kind: Type.Optional(Type.Enum([...TENSOR_KINDS])),
    writable: Type.Optional(Type.Enum(['true', 'false'])),
  },
  { additionalProperties: false },
);

const ManifestRow = Type.Object(
  {
    name: Type.String(),
    shape: Type.Array(Type.Integer()),
    dtype: Type.String(),
    numel: Type.Integer(),
    writable: Type.Boolean(),
    aliases: Type.Array(Type.String()),
    layer: Type.Union([Type.Integer(), Type.Null()]),
    kind: Type.Enum([...TENSOR_KINDS]),
    fixed_reason: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

export const ManifestReply = Type.Object(
  { count: Type.Integer(), tensors: Type.Array(ManifestRow) },
  { $id: 'ManifestReply', additionalProperties: false },
);
