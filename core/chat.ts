// One message of a chat, as the tokenizer's chat template, the taskset's items, the service's routes and the MMLU-Pro
// runner all take it. Roles beyond these three (OpenAI's `developer`) are mapped at the edge that accepts them.
export type ChatMessage = { role: 'system' | 'user' | 'assistant'; content: string };
