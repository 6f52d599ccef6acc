// What a tool call runs against: the episode's budgets, its weights (for the engine) and its weight-store episode.
import type { BudgetLedger } from '../budgets.ts';
import { IwiError } from '../errors.ts';
import type { WeightSource } from '../../engine/index.ts';
import type { ChatMessage } from '../../core/chat.ts';
import type { SequenceInput } from '../target.ts';
import type { EpisodeWeights } from '../weights/index.ts';

export type ToolContext = { ledger: BudgetLedger; weights: WeightSource; store: EpisodeWeights };

/** A sequence is messages or a prompt, never both or neither (the schema allows both keys). */
export function checkSequence(sequence: Partial<{ messages: ChatMessage[]; prompt: string }>): SequenceInput {
  const hasMessages = sequence.messages !== undefined;
  const hasPrompt = sequence.prompt !== undefined;
  if (hasMessages === hasPrompt)
    throw new IwiError('REQUEST_INVALID', 'each sequence needs exactly one of "messages" or "prompt"');
  return hasMessages ? { messages: sequence.messages! } : { prompt: sequence.prompt! };
}
