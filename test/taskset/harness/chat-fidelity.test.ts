// The Chat Completions path against the fake editor API (real HTTP, the real openai client): providers other than
// the default editor get no reasoning_effort unless it is asked for, and reasoning the provider returns on an
// assistant message goes back with that message, field for field, on the next request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatEditor } from '../../../taskset/harness/chat.ts';
import { openaiClient } from '../../../taskset/harness/client.ts';
import { resolveEditorConfig, type EditorOptions } from '../../../taskset/harness/index.ts';
import { SERVICE_TOOLSET } from '../../../taskset/taskset.ts';
import { API_KEY, FakeEditorApi } from './fake-editor-api.ts';

let api: FakeEditorApi;
beforeAll(async () => {
  api = await FakeEditorApi.start();
});
afterAll(async () => api?.close());

const usage = { input: 10, cached: 0, output: 5, reasoning: 3 };
const editorFor = (options: EditorOptions) => {
  const config = resolveEditorConfig({ baseUrl: api.url, ...options }, { OPENAI_API_KEY: API_KEY });
  return new ChatEditor(openaiClient(config), config, SERVICE_TOOLSET, 'system text', 'the brief');
};

describe('Chat Completions fidelity', () => {
  it("sends no reasoning_effort to another provider's model unless --reasoning-effort is given (any level, passed through); the default editor keeps none", async () => {
    api.script([
      { text: 'a', usage },
      { text: 'b', usage },
      { text: 'c', usage },
    ]);
    for (const options of [
      { model: 'deepseek-reasoner' },
      { model: 'deepseek-reasoner', reasoningEffort: 'thorough' }, // no OpenAI level: the provider answers for it
      {},
    ]) {
      const editor = editorFor(options);
      await editor.send(editor.nextRequest());
    }
    const [other, asked, standard] = api.requests.map((r) => r.body);
    expect(other).not.toHaveProperty('reasoning_effort');
    expect(other).toMatchObject({ model: 'deepseek-reasoner', temperature: 0, max_completion_tokens: 4096 });
    expect(asked).toMatchObject({ reasoning_effort: 'thorough' });
    expect(standard).toMatchObject({ model: 'gpt-6.1-terra', reasoning_effort: 'none' });
  });

  it('carries reasoning_content and reasoning back on the assistant messages, as returned', async () => {
    const call = { name: 'read_weights', arguments: { op: 'metadata' } };
    api.script([
      { reasoning: 'first, look at the norms', calls: [call], usage },
      { reasoning: 'then decide', chatReasoningField: 'reasoning', calls: [call], usage },
      { text: 'done', usage },
    ]);
    const editor = editorFor({ model: 'deepseek-reasoner' });
    for (let turn = 0; turn < 3; turn++) {
      const { reply } = await editor.send(editor.nextRequest());
      if (reply.toolCalls.length > 0)
        editor.addToolResults(reply.toolCalls.map((c) => ({ callId: c.id, output: '{"ok": true}' })));
    }
    const assistants = api.requests[2]!.body.messages.filter((m: { role: string }) => m.role === 'assistant');
    expect(assistants).toHaveLength(2);
    expect(assistants[0]).toMatchObject({
      reasoning_content: 'first, look at the norms',
      tool_calls: [{ id: 'call_1_0' }],
    });
    expect(assistants[0]).not.toHaveProperty('reasoning');
    expect(assistants[1]).toMatchObject({ reasoning: 'then decide', tool_calls: [{ id: 'call_2_0' }] });
    expect(assistants[1]).not.toHaveProperty('reasoning_content');
    // The first request had nothing to carry.
    expect(api.requests[0]!.body.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
  });
});
