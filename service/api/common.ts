// Schemas more than one route shares: a chat message, the budget state every episode reply carries, the error reply.
// Each is TypeBox (JSON Schema as data, its TypeScript type derived); the Fastify app registers those with an `$id`
// (index.ts) and routes point at them with `ref`.
import Type, { type Static, type TSchema, type TUnsafe } from 'typebox';
import type { ChatMessage as CoreChatMessage } from '../../core/chat.ts';
import { LIMITS } from './limits.ts';

/** A schema by reference (`{"$ref": id}`) that keeps the referenced schema's type for the route's handler. */
export function ref<T extends TSchema>(schema: T): TUnsafe<Static<T>> {
  const id = (schema as { $id?: unknown }).$id;
  if (typeof id !== 'string') throw new Error('ref() needs a schema with an $id');
  return Type.Unsafe<Static<T>>({ $ref: id });
}

/** One chat message, as episode practice examples and the target tools take it. Embedded where used (no `$id`), so
 * the tool parameters the editor sees stay self-contained. */
export const ChatMessage = Type.Object(
  { role: Type.Enum(['system', 'user', 'assistant']), content: Type.String({ maxLength: LIMITS.messageChars }) },
  { additionalProperties: false },
);
export type ChatMessage = CoreChatMessage;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** tsc holds the schema's type equal to core's ChatMessage, the one chat-message type of every layer. */
export const CHAT_MESSAGE_IS_CORE: Same<Static<typeof ChatMessage>, CoreChatMessage> = true;

const counts = Type.Record(Type.String(), Type.Number());

/** Limits, use and what is left of an episode's budgets, as every episode reply reports them. */
export const BudgetState = Type.Object(
  { limits: counts, used: counts, remaining: counts },
  { $id: 'BudgetState', additionalProperties: false },
);
export type BudgetState = Static<typeof BudgetState>;

/** The budget a refused call exceeded, as data: a per-call limit (retry smaller) or an exhausted one. */
export const BudgetExceeded = Type.Object(
  {
    kind: Type.String(),
    scope: Type.Enum(['per call', 'per episode']),
    value: Type.Number(),
    limit: Type.Number(),
    remaining: Type.Number(),
  },
  { additionalProperties: false },
);

/** Every error of the non-OpenAI routes: fastify's shape with a code of service/errors.ts, plus the episode's budget. */
export const ErrorReply = Type.Object(
  {
    statusCode: Type.Integer(),
    code: Type.String(),
    error: Type.String(),
    message: Type.String(),
    budget: Type.Optional(ref(BudgetState)),
    budget_exceeded: Type.Optional(BudgetExceeded),
  },
  { $id: 'ErrorReply', additionalProperties: false },
);
export type ErrorReply = Static<typeof ErrorReply>;
