// What an OpenAI-compatible request asks of the target: the weights its model name stands for, the prompts as token
// ids, how many tokens to generate, the stop strings, the log-probabilities and the echo. The routes (routes/openai.ts)
// turn a checked body into an Ask; run.ts and respond.ts answer it.
import type { ChatMessage } from '../../core/chat.ts';
import type { WeightSource } from '../../engine/index.ts';
import { LIMITS } from '../api/limits.ts';
import type { EpisodeRegistry } from '../episodes.ts';
import { IwiError, quote } from '../errors.ts';
import { OpenAIParameterError, type ChatBody, type CompletionBody } from './params.ts';
import type { Target } from '../target.ts';

const DEFAULT_MAX_TOKENS = 256;
const MAX_TOKENS_CAP = 8192;

export type Ask = {
  kind: 'chat' | 'text';
  model: string;
  weights: WeightSource;
  /** 0: generate nothing (echo only). */
  maxNewTokens: number;
  stops: string[];
  /** How many most likely tokens to return at each position; null: no log-probabilities at all. */
  topK: number | null;
  echo: boolean;
};

/** A chat completion's one prompt: the messages through the chat template. */
export function chatAsk(target: Target, registry: EpisodeRegistry, body: ChatBody): { ask: Ask; prompts: number[][] } {
  const prompts = [target.promptIds({ messages: body.messages.map(toChatMessage) })];
  const ask: Ask = {
    kind: 'chat',
    model: body.model,
    weights: weightsFor(target, registry, body.model),
    maxNewTokens: Math.min(body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS, MAX_TOKENS_CAP),
    stops: stopsOf(body.stop),
    topK: body.logprobs === true ? (body.top_logprobs ?? 0) : null,
    echo: false,
  };
  return { ask, prompts };
}

/** A completion's prompts: texts after a BOS (as `Tokenizer.encode`), token ids exactly as given. */
export function textAsk(
  target: Target,
  registry: EpisodeRegistry,
  body: CompletionBody,
): { ask: Ask; prompts: number[][] } {
  const prompts = completionPrompts(target, body.prompt);
  const ask: Ask = {
    kind: 'text',
    model: body.model,
    weights: weightsFor(target, registry, body.model),
    maxNewTokens: body.max_tokens === 0 ? 0 : Math.min(body.max_tokens ?? DEFAULT_MAX_TOKENS, MAX_TOKENS_CAP),
    stops: stopsOf(body.stop),
    topK: body.logprobs ?? null,
    echo: body.echo === true,
  };
  return { ask, prompts };
}

/** The models served: the pristine target and each submitted patch over it. */
export function servedModels(target: Target, registry: EpisodeRegistry): string[] {
  return [target.modelId, ...[...registry.patches.keys()].map((sha) => `${target.modelId}+patch:${sha}`)];
}

/** The weights a model name stands for: pristine, or a submitted patch applied to pristine (id and digests verified). */
function weightsFor(target: Target, registry: EpisodeRegistry, model: string): WeightSource {
  if (model === target.modelId) return target.pristine;
  const match = /^(.+)\+patch:([0-9a-f]{64})$/.exec(model);
  const dir = match && match[1] === target.modelId ? registry.patches.get(match[2]!) : undefined;
  if (!match || !dir)
    throw new IwiError(
      'MODEL_NOT_FOUND',
      `model ${quote(model)} is not served here (GET /v1/models lists ${target.modelId} and its submitted patches)`,
    );
  return target.patched.source(match[2]!, dir); // PATCH_ID_MISMATCH if the folder was swapped
}

function completionPrompts(target: Target, prompt: CompletionBody['prompt']): number[][] {
  const list =
    typeof prompt === 'string'
      ? [prompt]
      : typeof prompt[0] === 'number'
        ? [prompt as number[]]
        : (prompt as (string | number[])[]);
  const vocabulary = target.checkpoint.config.vocab_size;
  return list.map((p, i) => {
    if (typeof p === 'string') return target.promptIds({ prompt: p });
    if (p.length > LIMITS.promptTokens)
      throw new OpenAIParameterError(
        'prompt',
        `prompt ${i} has ${p.length} tokens; the limit is ${LIMITS.promptTokens}`,
      );
    const bad = p.findIndex((id) => id < 0 || id >= vocabulary);
    if (bad >= 0) {
      throw new OpenAIParameterError(
        'prompt',
        `prompt ${i}: token id ${p[bad]} at position ${bad} is outside the vocabulary 0…${vocabulary - 1}`,
      );
    }
    return p;
  });
}

function stopsOf(stop: string | string[] | null | undefined): string[] {
  return stop == null ? [] : Array.isArray(stop) ? stop.filter((s) => s.length > 0) : [stop];
}

function toChatMessage(message: ChatBody['messages'][number]): ChatMessage {
  const content =
    typeof message.content === 'string' ? message.content : message.content.map((part) => part.text).join('');
  const role = message.role === 'developer' ? 'system' : (message.role as ChatMessage['role']);
  return { role, content };
}
