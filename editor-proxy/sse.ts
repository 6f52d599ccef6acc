// `--buffer-chat`: read a streamed Chat Completions response (SSE) and reassemble it into the one
// `chat.completion` object the upstream would have returned without streaming. SSE framing and `[DONE]` are left
// to the openai package's decoder; this file only knows how chunks add up.
import { Stream } from 'openai/streaming';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionMessage,
  ChatCompletionMessageFunctionToolCall,
} from 'openai/resources/chat/completions';

/** Reasoning text that providers stream next to `content` (vLLM/DeepSeek `reasoning_content`, OpenRouter `reasoning`). */
type ReasoningFields = { reasoning_content?: string | null; reasoning?: string | null };
type Delta = ChatCompletionChunk.Choice.Delta & ReasoningFields;
export type AssembledMessage = ChatCompletionMessage & ReasoningFields;

/** Delta fields that arrive in pieces and are concatenated. */
const TEXT_FIELDS = ['content', 'refusal', 'reasoning_content', 'reasoning'] as const;

export class IncompleteStreamError extends Error {
  override name = 'IncompleteStreamError';
}

/** Every chunk of an SSE body, then the completion they encode. */
export async function readChatCompletionStream(body: ReadableStream<Uint8Array>): Promise<ChatCompletion> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of Stream.fromSSEResponse<ChatCompletionChunk>(new Response(body), new AbortController())) {
    chunks.push(chunk);
  }
  return assembleChatCompletion(chunks);
}

/** The non-streamed completion that `chunks` encode: text concatenated, tool calls joined by index, usage kept. */
export function assembleChatCompletion(chunks: ChatCompletionChunk[]): ChatCompletion {
  const first = chunks[0];
  if (first === undefined) throw new IncompleteStreamError('the stream carried no chunks');
  const completion: ChatCompletion = {
    id: first.id,
    object: 'chat.completion',
    created: first.created,
    model: first.model,
    choices: [],
  };
  const choices = new Map<number, ChoiceSoFar>();

  for (const chunk of chunks) {
    if (chunk.usage) completion.usage = chunk.usage; // the last chunk (choices: []) under include_usage
    if (chunk.system_fingerprint) completion.system_fingerprint = chunk.system_fingerprint;
    if (chunk.service_tier) completion.service_tier = chunk.service_tier;
    for (const piece of chunk.choices) {
      let choice = choices.get(piece.index);
      if (choice === undefined) {
        choice = {
          message: { role: 'assistant', content: null, refusal: null },
          toolCalls: new Map(),
          logprobs: null,
          finishReason: null,
        };
        choices.set(piece.index, choice);
      }
      addDelta(choice, piece.delta ?? {}); // some providers leave `delta` out of the final chunk
      if (piece.logprobs) {
        const logprobs = (choice.logprobs ??= { content: null, refusal: null });
        if (piece.logprobs.content) logprobs.content = [...(logprobs.content ?? []), ...piece.logprobs.content];
        if (piece.logprobs.refusal) logprobs.refusal = [...(logprobs.refusal ?? []), ...piece.logprobs.refusal];
      }
      if (piece.finish_reason) choice.finishReason = piece.finish_reason;
    }
  }

  if (choices.size === 0) throw new IncompleteStreamError('the stream carried no choices');
  for (const [index, choice] of [...choices.entries()].sort(([a], [b]) => a - b)) {
    if (choice.finishReason === null)
      throw new IncompleteStreamError(`the stream ended before choice ${index} finished (no finish_reason)`);
    const message = choice.message;
    if (choice.toolCalls.size > 0)
      message.tool_calls = [...choice.toolCalls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
    completion.choices.push({ index, finish_reason: choice.finishReason, logprobs: choice.logprobs, message });
  }
  return completion;
}

type ChoiceSoFar = {
  message: AssembledMessage;
  toolCalls: Map<number, ChatCompletionMessageFunctionToolCall>;
  logprobs: ChatCompletion.Choice.Logprobs | null;
  finishReason: ChatCompletion.Choice['finish_reason'] | null;
};

function addDelta(choice: ChoiceSoFar, delta: Delta): void {
  for (const field of TEXT_FIELDS) {
    const text = delta[field];
    if (typeof text === 'string') choice.message[field] = (choice.message[field] ?? '') + text;
  }
  for (const part of delta.tool_calls ?? []) {
    // As in openai-node's ChatCompletionStream: id, type and name arrive once; arguments arrive in pieces.
    const call = choice.toolCalls.get(part.index) ?? {
      id: '',
      type: 'function',
      function: { name: '', arguments: '' },
    };
    if (part.id) call.id = part.id;
    if (part.function?.name) call.function.name = part.function.name;
    if (part.function?.arguments) call.function.arguments += part.function.arguments;
    choice.toolCalls.set(part.index, call);
  }
}
