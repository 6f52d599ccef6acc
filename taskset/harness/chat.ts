// The editor over Chat Completions: one growing message list; assistant messages keep their tool calls and any
// reasoning the provider returned with them (REASONING_FIELDS), followed by one `role: tool` message per call.
import type OpenAI from 'openai';
import type { ReasoningEffort } from 'openai/resources/shared';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { Toolset } from '../taskset.ts';
import { EditorReplyError } from './client.ts';
import type { EditorConfig } from './config.ts';
import type { EditorModel, SentRequest, ToolCall } from './model.ts';
import type { Usage } from './trace.ts';

function chatTools(toolset: Toolset): ChatCompletionTool[] {
  return toolset.tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/**
 * Reasoning continuations that Chat Completions providers return on the assistant message, outside OpenAI's schema:
 * `reasoning_content` (DeepSeek, vLLM, Qwen), `reasoning` and `reasoning_details` (OpenRouter). Sent back as returned.
 */
export const REASONING_FIELDS = ['reasoning_content', 'reasoning', 'reasoning_details'] as const;

export class ChatEditor implements EditorModel<ChatCompletionCreateParamsNonStreaming> {
  readonly api = 'chat';
  private readonly messages: ChatCompletionMessageParam[];
  private readonly tools: ChatCompletionTool[];

  constructor(
    private readonly client: OpenAI,
    private readonly config: EditorConfig,
    toolset: Toolset,
    system: string,
    firstMessage: string,
  ) {
    this.tools = chatTools(toolset);
    this.messages = [
      { role: 'system', content: system },
      { role: 'user', content: firstMessage },
    ];
  }

  nextRequest(): ChatCompletionCreateParamsNonStreaming {
    const { config } = this;
    return {
      model: config.model,
      messages: [...this.messages],
      tools: this.tools,
      max_completion_tokens: config.maxOutputTokens,
      ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
      // Sent only when set: many Chat Completions providers refuse the field.
      // Any level is passed through (the SDK's type lists OpenAI's; the provider answers for the rest).
      ...(config.reasoningEffort !== undefined ? { reasoning_effort: config.reasoningEffort as ReasoningEffort } : {}),
    };
  }

  async send(request: ChatCompletionCreateParamsNonStreaming): Promise<SentRequest> {
    const { data, request_id } = await this.client.chat.completions.create(request).withResponse();
    const choice = data.choices?.[0];
    if (!choice) throw new EditorReplyError(`the chat completion ${data.id ?? ''} has no choices`);
    const { message } = choice;
    // Only function tools are offered, so function calls are the only kind that can come back.
    const toolCalls: ToolCall[] = (message.tool_calls ?? []).flatMap((call) =>
      call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : [],
    );
    const returned = message as unknown as Record<string, unknown>;
    const reasoning = Object.fromEntries(
      REASONING_FIELDS.filter((f) => returned[f] !== undefined && returned[f] !== null).map((f) => [f, returned[f]]),
    );
    this.messages.push({
      role: 'assistant',
      content: message.content ?? null,
      ...reasoning,
      ...(toolCalls.length > 0
        ? {
            tool_calls: toolCalls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments },
            })),
          }
        : {}),
    });
    return {
      response: data,
      requestId: request_id,
      reply: {
        text: message.content ?? '',
        toolCalls,
        usage: chatUsage(data.usage),
        truncated: choice.finish_reason === 'length',
      },
    };
  }

  addToolResults(results: { callId: string; output: string }[]): void {
    for (const { callId, output } of results)
      this.messages.push({ role: 'tool', tool_call_id: callId, content: output });
  }
}

/** prompt_tokens include cached tokens and completion_tokens include reasoning tokens, as in our Usage. */
export function chatUsage(usage: ChatCompletion['usage']): Usage {
  return {
    input_tokens: usage?.prompt_tokens ?? 0,
    cached_input_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    output_tokens: usage?.completion_tokens ?? 0,
    reasoning_tokens: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}
