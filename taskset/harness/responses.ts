// The editor over the Responses API, stateless (`store: false`): every request carries the whole conversation.
// Every output item of a response, reasoning items included, goes back into the next request's input, followed by
// one `function_call_output` per call; with `include: ['reasoning.encrypted_content']` the reasoning items carry
// their encrypted content, the only way the model keeps its reasoning across turns when nothing is stored.
import type OpenAI from 'openai';
import type { ReasoningEffort } from 'openai/resources/shared';
import type {
  FunctionTool,
  Response,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
} from 'openai/resources/responses/responses';
import type { Toolset } from '../taskset.ts';
import { EditorReplyError } from './client.ts';
import type { EditorConfig } from './config.ts';
import type { EditorModel, SentRequest, ToolCall } from './model.ts';
import type { Usage } from './trace.ts';

// strict: false because the schemas use optional fields and anyOf, which strict mode refuses.
function responsesTools(toolset: Toolset): FunctionTool[] {
  return toolset.tools.map((tool) => ({
    type: 'function',
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: false,
  }));
}

export class ResponsesEditor implements EditorModel<ResponseCreateParamsNonStreaming> {
  readonly api = 'responses';
  private readonly input: ResponseInputItem[];
  private readonly tools: FunctionTool[];

  constructor(
    private readonly client: OpenAI,
    private readonly config: EditorConfig,
    toolset: Toolset,
    private readonly instructions: string,
    firstMessage: string,
  ) {
    this.tools = responsesTools(toolset);
    this.input = [{ role: 'user', content: firstMessage }];
  }

  nextRequest(): ResponseCreateParamsNonStreaming {
    const { config } = this;
    // No temperature: the reasoning models this API serves refuse it.
    return {
      model: config.model,
      instructions: this.instructions,
      input: [...this.input],
      tools: this.tools,
      max_output_tokens: config.maxOutputTokens,
      ...(config.reasoningEffort !== undefined
        ? { reasoning: { effort: config.reasoningEffort as ReasoningEffort } }
        : {}),
      store: false,
      include: ['reasoning.encrypted_content'],
    };
  }

  async send(request: ResponseCreateParamsNonStreaming): Promise<SentRequest> {
    const { data, request_id } = await this.client.responses.create(request).withResponse();
    if (data.status === 'failed')
      throw new EditorReplyError(
        `response ${data.id} failed: ${data.error?.code ?? ''} ${data.error?.message ?? ''}`.trim(),
      );
    if (!Array.isArray(data.output)) throw new EditorReplyError(`response ${data.id} has no output`);
    // Output items are valid input items as they come (the documented stateless pattern).
    this.input.push(...(data.output as ResponseInputItem[]));
    const toolCalls: ToolCall[] = data.output.flatMap((item) =>
      item.type === 'function_call' ? [{ id: item.call_id, name: item.name, arguments: item.arguments }] : [],
    );
    return {
      response: data,
      requestId: request_id,
      reply: {
        text: outputText(data),
        toolCalls,
        usage: responsesUsage(data.usage),
        truncated: data.status === 'incomplete',
      },
    };
  }

  addToolResults(results: { callId: string; output: string }[]): void {
    for (const { callId, output } of results)
      this.input.push({ type: 'function_call_output', call_id: callId, output });
  }
}

function outputText(response: Response): string {
  const parts = response.output.flatMap((item) => (item.type === 'message' ? item.content : []));
  return parts.map((part) => (part.type === 'output_text' ? part.text : part.refusal)).join('');
}

/** input_tokens include cached tokens and output_tokens include reasoning tokens, as in our Usage. */
export function responsesUsage(usage: Response['usage']): Usage {
  return {
    input_tokens: usage?.input_tokens ?? 0,
    cached_input_tokens: usage?.input_tokens_details?.cached_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    reasoning_tokens: usage?.output_tokens_details?.reasoning_tokens ?? 0,
  };
}
