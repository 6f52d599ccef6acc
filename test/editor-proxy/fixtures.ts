// What the fake upstream says: a Chat Completions answer both whole and as chunks (with reasoning, two tool calls
// split across chunks, and usage with cached and reasoning tokens), and a Responses API answer whole and as events.
// The whole forms are written out by hand, so a reassembly bug cannot hide by agreeing with itself.
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';

const head = {
  id: 'chatcmpl-fake1',
  object: 'chat.completion.chunk',
  created: 1760000000,
  model: 'gpt-fake-terra',
  system_fingerprint: 'fp_fake',
} as const;

export const chatChunks: ChatCompletionChunk[] = [
  {
    ...head,
    choices: [
      {
        index: 0,
        delta: { role: 'assistant', content: '', reasoning_content: 'Check the ' } as never,
        finish_reason: null,
      },
    ],
  },
  { ...head, choices: [{ index: 0, delta: { reasoning_content: 'MLP of layer 3.' } as never, finish_reason: null }] },
  { ...head, choices: [{ index: 0, delta: { content: 'Reading ' }, finish_reason: null }] },
  { ...head, choices: [{ index: 0, delta: { content: 'weights.' }, finish_reason: null }] },
  {
    ...head,
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read_weights', arguments: '' } }],
        },
        finish_reason: null,
      },
    ],
  },
  {
    ...head,
    choices: [
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"op":"met' } }] }, finish_reason: null },
    ],
  },
  {
    ...head,
    choices: [
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 1, id: 'call_b', type: 'function', function: { name: 'run_target', arguments: '{"prompts":' } },
          ],
        },
        finish_reason: null,
      },
    ],
  },
  {
    ...head,
    choices: [
      { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: 'adata"}' } }] }, finish_reason: null },
    ],
  },
  {
    ...head,
    choices: [
      { index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: '["Hi"]}' } }] }, finish_reason: null },
    ],
  },
  { ...head, choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  { ...head, choices: [], usage: usage() },
];

export const chatCompletion = {
  id: 'chatcmpl-fake1',
  object: 'chat.completion',
  created: 1760000000,
  model: 'gpt-fake-terra',
  system_fingerprint: 'fp_fake',
  choices: [
    {
      index: 0,
      finish_reason: 'tool_calls',
      logprobs: null,
      message: {
        role: 'assistant',
        content: 'Reading weights.',
        refusal: null,
        reasoning_content: 'Check the MLP of layer 3.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'read_weights', arguments: '{"op":"metadata"}' } },
          { id: 'call_b', type: 'function', function: { name: 'run_target', arguments: '{"prompts":["Hi"]}' } },
        ],
      },
    },
  ],
  usage: usage(),
};

function usage() {
  return {
    prompt_tokens: 1200,
    completion_tokens: 95,
    total_tokens: 1295,
    prompt_tokens_details: { cached_tokens: 1024, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 40,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** A request as the harness sends it: tools, and an earlier assistant turn carrying its reasoning. */
export const chatRequest = {
  model: 'gpt-fake-terra',
  temperature: 0,
  max_completion_tokens: 4096,
  messages: [
    { role: 'system', content: 'You edit weights.' },
    { role: 'user', content: 'Make the target answer in French.' },
    {
      role: 'assistant',
      content: null,
      reasoning_content: 'Start with metadata.',
      tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'read_weights', arguments: '{}' } }],
    },
    { role: 'tool', tool_call_id: 'call_0', content: '{"tensors": 340}' },
  ],
  tools: [
    {
      type: 'function',
      function: {
        name: 'read_weights',
        description: 'Read weights.',
        parameters: { type: 'object', properties: { op: { type: 'string' } } },
      },
    },
  ],
  vendor_extension: { keep: ['me'] },
};

const reasoningItem = {
  type: 'reasoning',
  id: 'rs_1',
  summary: [{ type: 'summary_text', text: 'Check layer 3 first.' }],
  encrypted_content: 'gAAAA-opaque-reasoning',
};
const functionCallItem = {
  type: 'function_call',
  id: 'fc_1',
  call_id: 'call_1',
  name: 'read_weights',
  arguments: '{"op":"metadata"}',
  status: 'completed',
};

export const response = {
  id: 'resp_fake1',
  object: 'response',
  created_at: 1760000000,
  status: 'completed',
  model: 'gpt-fake-sol',
  output: [reasoningItem, functionCallItem],
  parallel_tool_calls: true,
  tool_choice: 'auto',
  tools: [],
  usage: {
    input_tokens: 3000,
    input_tokens_details: { cached_tokens: 2816 },
    output_tokens: 180,
    output_tokens_details: { reasoning_tokens: 128 },
    total_tokens: 3180,
  },
};

export const responseEvents = [
  {
    type: 'response.created',
    sequence_number: 0,
    response: { ...response, status: 'in_progress', output: [], usage: null },
  },
  { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...reasoningItem, summary: [] } },
  {
    type: 'response.reasoning_summary_text.delta',
    sequence_number: 2,
    item_id: 'rs_1',
    output_index: 0,
    summary_index: 0,
    delta: 'Check layer 3 first.',
  },
  { type: 'response.output_item.done', sequence_number: 3, output_index: 0, item: reasoningItem },
  {
    type: 'response.output_item.added',
    sequence_number: 4,
    output_index: 1,
    item: { ...functionCallItem, arguments: '', status: 'in_progress' },
  },
  {
    type: 'response.function_call_arguments.delta',
    sequence_number: 5,
    item_id: 'fc_1',
    output_index: 1,
    delta: '{"op":',
  },
  {
    type: 'response.function_call_arguments.delta',
    sequence_number: 6,
    item_id: 'fc_1',
    output_index: 1,
    delta: '"metadata"}',
  },
  { type: 'response.output_item.done', sequence_number: 7, output_index: 1, item: functionCallItem },
  { type: 'response.completed', sequence_number: 8, response },
];

/** A Responses request continuing a reasoning model's turn: its reasoning item goes back in, encrypted. */
export const responsesRequest = {
  model: 'gpt-fake-sol',
  instructions: 'You edit weights.',
  input: [
    { role: 'user', content: 'Make the target answer in French.' },
    reasoningItem,
    functionCallItem,
    { type: 'function_call_output', call_id: 'call_1', output: '{"tensors": 340}' },
  ],
  tools: [
    {
      type: 'function',
      name: 'read_weights',
      parameters: { type: 'object', properties: { op: { type: 'string' } } },
      strict: false,
    },
  ],
  reasoning: { effort: 'low' },
  include: ['reasoning.encrypted_content'],
  store: false,
  max_output_tokens: 4096,
};
