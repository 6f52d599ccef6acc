// The harness against a fake editor API (real HTTP, the real openai client) and a real service on the tiny fixture.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTraceUsage } from '../../../report/token-efficiency.ts';
import { TOOL_DEFINITIONS } from '../../../service/tools/schemas.ts';
import { resolveEditorConfig, runEditor, type EditorOptions } from '../../../taskset/harness/index.ts';
import { SERVICE_TOOLSET, defineToolset } from '../../../taskset/taskset.ts';
import { API_KEY, FakeEditorApi, type FakeReply, type FakeUsage } from './fake-editor-api.ts';
import { DOWN, lineTypes, readSummary, readTrace, SPEC, startService, traceDir, type TestService } from './helpers.ts';

let service: TestService;
let api: FakeEditorApi;

beforeAll(async () => {
  [service, api] = await Promise.all([startService(), FakeEditorApi.start()]);
});
afterAll(async () => {
  await Promise.all([service?.close(), api?.close()]);
});

const config = (options: EditorOptions = {}) =>
  resolveEditorConfig({ baseUrl: api.url, ...options }, { OPENAI_API_KEY: API_KEY });
const usage = (input: number, cached: number, output: number, reasoning: number): FakeUsage => ({
  input,
  cached,
  output,
  reasoning,
});
const call = (name: string, args: Record<string, unknown> | string) => ({ name, arguments: args });
const metadata = call('read_weights', { op: 'metadata', filter: { name: 'model.norm.weight' } });

/** The sums the harness must report for these replies. */
function totals(replies: FakeReply[]) {
  const used = replies.flatMap((r) => ('usage' in r ? [r.usage] : []));
  const sum = (key: keyof FakeUsage) => used.reduce((total, u) => total + u[key], 0);
  return {
    input_tokens: sum('input'),
    cached_input_tokens: sum('cached'),
    output_tokens: sum('output'),
    reasoning_tokens: sum('reasoning'),
    requests: used.length,
    failed_requests: 0,
  };
}

describe('Chat Completions', () => {
  const replies: FakeReply[] = [
    {
      calls: [
        call('read_weights', { op: 'metadata', filter: { name: DOWN } }),
        call('read_weights', { op: 'slice', tensor: DOWN, slice: [[0, 100]] }), // 64 rows: out of range
        call('read_weights', '{"op": "slice", "tensor"'), // truncated JSON
      ],
      usage: usage(1200, 0, 90, 0),
    },
    {
      calls: [
        call('write_weights', { op: 'fill', tensor: DOWN, slice: [0, [0, 4]], value: 0.5 }),
        call('write_weights', { op: 'scale', tensor: DOWN, slice: [1], factor: 2 }),
      ],
      usage: usage(2400, 1024, 60, 12),
    },
    { text: 'Two edits made.', usage: usage(2600, 2048, 10, 4) },
  ];

  it('sends the brief, returns tool results and errors, submits on the final reply, and traces it all', async () => {
    api.script(replies);
    const editor = await service.episode();
    const dir = traceDir('chat');
    const result = await runEditor({ editor, config: config(), toolset: SERVICE_TOOLSET, traceDir: dir });

    expect(result).toMatchObject({
      stopReason: 'final_reply',
      turns: 3,
      toolCalls: 5,
      toolErrors: 2,
      finalReply: 'Two edits made.',
    });
    expect(result.usage).toEqual(totals(replies));
    expect(result.submitted.patch.ops).toBe(2);
    expect(result.submitted.patch.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(await service.admin.episode(editor.episodeId)).toMatchObject({ status: 'submitted', op_count: 2 });

    // The first request: the settings design.md fixes, the four tools as the service defines them, and the brief.
    expect(api.requests.map((r) => r.path)).toEqual(Array(3).fill('/v1/chat/completions'));
    const first = api.requests[0]!.body;
    expect(first).toMatchObject({
      model: 'gpt-6.1-terra',
      temperature: 0,
      max_completion_tokens: 4096,
      reasoning_effort: 'none',
    });
    expect(first.tools).toEqual(
      TOOL_DEFINITIONS.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
    );
    expect(first.messages.map((m: any) => m.role)).toEqual(['system', 'user']);
    expect(first.messages[0].content).toContain('reply without any tool call');
    const brief = await editor.brief();
    const message: string = first.messages[1].content;
    expect(message).toContain(SPEC.objective as string);
    for (const line of brief.manifest) expect(message).toContain(line);
    expect(message).toContain(`model.layers.{0..5}.mlp.down_proj.weight [64,128] BF16 writable`);
    for (const { id, token } of brief.relevant_tokens) expect(message).toContain(`${id}: ${JSON.stringify(token)}`);
    expect(message).toContain('[user] Who is the chancellor of Germany?');
    expect(message).toContain('[expected response] Friedrich Merz.');

    // The second request: the assistant's calls, then one tool message per call, errors included.
    const second = api.requests[1]!.body.messages;
    expect(second.map((m: any) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'tool']);
    const callIds = second[2].tool_calls.map((c: any) => c.id);
    expect(second.slice(3).map((m: any) => m.tool_call_id)).toEqual(callIds);
    const [metadataResult, rangeError, jsonError] = second.slice(3).map((m: any) => JSON.parse(m.content));
    expect(JSON.stringify(metadataResult.result)).toContain(DOWN);
    expect(metadataResult.budget.tool_calls).toBe(127);
    expect(rangeError.error.code).toBe('SLICE_OUT_OF_RANGE');
    expect(rangeError.budget.tool_calls).toBe(127); // a refused call is not charged
    expect(jsonError.error.code).toBe('ARGUMENTS_INVALID');
    const writes = api.requests[2]!.body.messages.slice(-2).map((m: any) => JSON.parse(m.content));
    expect(writes.map((w: any) => w.error)).toEqual([undefined, undefined]);

    // The trace: what was sent is what the server got; every response with its usage; every tool call.
    const lines = readTrace(dir);
    expect(lineTypes(lines)).toEqual({ brief: 1, request: 3, response: 3, tool: 5, stop: 1, submit: 1 });
    expect(lines.filter((l) => l.type === 'request').map((l) => l.body)).toEqual(api.requests.map((r) => r.body));
    expect(lines.filter((l) => l.type === 'response').map((l) => l.body)).toEqual(api.responses);
    expect(lines.filter((l) => l.type === 'response').map((l) => l.usage.cached_input_tokens)).toEqual([0, 1024, 2048]);
    expect(lines.filter((l) => l.type === 'tool').map((l) => l.ok)).toEqual([true, false, false, true, true]);
    for (const line of lines) expect(Date.parse(line.time)).not.toBeNaN();
    expect(readSummary(dir)).toMatchObject({
      stop_reason: 'final_reply',
      turns: 3,
      tool_calls: 5,
      tool_errors: 2,
      usage: totals(replies),
      config: { model: 'gpt-6.1-terra', api: 'chat' },
    });
    // The key never reaches a file.
    for (const file of readdirSync(dir)) expect(readFileSync(path.join(dir, file), 'utf8')).not.toContain(API_KEY);
  });
});

describe('Responses API', () => {
  const replies: FakeReply[] = [
    {
      reasoning: 'look at layer 0 first',
      calls: [call('read_weights', { op: 'summary', tensor: DOWN })],
      usage: usage(900, 0, 300, 256),
    },
    {
      reasoning: 'now edit',
      calls: [
        call('write_weights', { op: 'fill', tensor: DOWN, slice: [0, [0, 2]], value: 0.25 }),
        call('read_weights', { op: 'slice', tensor: DOWN, slice: [70] }),
      ],
      usage: usage(1500, 896, 200, 150),
    },
    { reasoning: 'done', text: 'One edit.', usage: usage(1800, 1408, 40, 20) },
  ];

  it('carries every output item, reasoning included, into the next input, with function_call_output items', async () => {
    api.script(replies);
    const editor = await service.episode();
    const dir = traceDir('responses');
    const result = await runEditor({
      editor,
      config: config({ model: 'gpt-6.1-sol' }),
      toolset: SERVICE_TOOLSET,
      traceDir: dir,
    });

    expect(result).toMatchObject({
      stopReason: 'final_reply',
      turns: 3,
      toolCalls: 3,
      toolErrors: 1,
      finalReply: 'One edit.',
    });
    expect(result.usage).toEqual(totals(replies));
    expect(result.submitted.patch.ops).toBe(1);

    expect(api.requests.map((r) => r.path)).toEqual(Array(3).fill('/v1/responses'));
    const [first, second, third] = api.requests.map((r) => r.body);
    expect(first).not.toHaveProperty('temperature');
    expect(first).toMatchObject({
      model: 'gpt-6.1-sol',
      max_output_tokens: 4096,
      reasoning: { effort: 'low' },
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    expect(first.tools).toEqual(
      TOOL_DEFINITIONS.map((t) => ({
        type: 'function',
        name: t.name,
        description: t.description,
        parameters: t.parameters,
        strict: false,
      })),
    );
    expect(first.instructions).toContain('reply without any tool call');
    expect(first.input).toHaveLength(1);
    expect(first.input[0].content).toContain(SPEC.objective as string);

    // Turn 2's input: the user message, response 1's output items exactly as sent, then the call's output.
    const [output1, output2] = [api.responses[0].output, api.responses[1].output];
    expect(output1[0]).toMatchObject({ type: 'reasoning', encrypted_content: 'gAAAA-encrypted-1' });
    expect(second.input.slice(1, 3)).toEqual(output1);
    expect(second.input[3]).toMatchObject({ type: 'function_call_output', call_id: output1[1].call_id });
    expect(JSON.parse(second.input[3].output).result).toHaveProperty('count');
    // Turn 3's input keeps everything and adds response 2's items and both results, the error among them.
    expect(third.input.slice(0, 4)).toEqual(second.input);
    expect(third.input.slice(4, 7)).toEqual(output2);
    const outputs = third.input.slice(7);
    expect(outputs.map((o: any) => o.call_id)).toEqual([output2[1].call_id, output2[2].call_id]);
    expect(JSON.parse(outputs[1].output).error.code).toBe('SLICE_OUT_OF_RANGE');

    const lines = readTrace(dir);
    expect(lineTypes(lines)).toMatchObject({ request: 3, response: 3, tool: 3 });
    expect(lines.filter((l) => l.type === 'response').map((l) => l.usage.reasoning_tokens)).toEqual([256, 150, 20]);
  });
});

describe('how an episode ends', () => {
  it("ends at the service's turn budget, and at the harness's own turn limit", async () => {
    api.script(Array(5).fill({ calls: [metadata], usage: usage(100, 0, 10, 0) }));
    const small = await service.episode({ budgets: { turns: 3 } });
    const byBudget = await runEditor({
      editor: small,
      config: config(),
      toolset: SERVICE_TOOLSET,
      traceDir: traceDir('turns'),
    });
    expect(byBudget).toMatchObject({ stopReason: 'turn_limit', turns: 3, toolCalls: 3 });
    expect(api.requests).toHaveLength(3);
    expect(byBudget.submitted.status).toBe('submitted');

    api.script(Array(5).fill({ calls: [metadata], usage: usage(100, 0, 10, 0) }));
    const editor = await service.episode();
    const byLimit = await runEditor({
      editor,
      config: config({ maxTurns: 2 }),
      toolset: SERVICE_TOOLSET,
      traceDir: traceDir('max-turns'),
    });
    expect(byLimit).toMatchObject({ stopReason: 'turn_limit', turns: 2 });
    expect(api.requests).toHaveLength(2);
    expect((await service.admin.episode(editor.episodeId)).budget.used.turns).toBe(2);
  });

  it('goes on after a budget refuses a call: the refusal is the tool result, counted per tool; the patch is submitted at the final reply', async () => {
    const runTarget = (args: Record<string, unknown>) =>
      call('run_target', { sequences: [{ messages: [{ role: 'user', content: 'Hi' }] }], max_new_tokens: 2, ...args });
    const write = call('write_weights', { op: 'fill', tensor: DOWN, slice: [0], value: 0.5 });
    api.script([
      { calls: [runTarget({ compare_base: true })], usage: usage(100, 0, 10, 0) }, // 2 evaluations, 1 left
      { calls: [runTarget({})], usage: usage(100, 0, 10, 0) }, // the smaller call fits
      { calls: [runTarget({})], usage: usage(100, 0, 10, 0) }, // run_target spent, the other tools are not
      { calls: [write], usage: usage(100, 0, 10, 0) },
      { text: 'Edited after two refusals.', usage: usage(100, 0, 10, 0) },
    ]);
    const editor = await service.episode({ budgets: { run_target_calls: 1, run_target_sequence_evaluations: 1 } });
    const dir = traceDir('refused');
    const result = await runEditor({ editor, config: config(), toolset: SERVICE_TOOLSET, traceDir: dir });
    expect(result).toMatchObject({
      stopReason: 'final_reply',
      turns: 5,
      toolCalls: 4,
      toolErrors: 2,
      refusedCalls: { run_target: 2 },
      finalReply: 'Edited after two refusals.',
    });
    expect(result.submitted.patch.ops).toBe(1);
    const refusal = JSON.parse(api.requests[1]!.body.messages.at(-1).content);
    expect(refusal.error.code).toBe('BUDGET_EXHAUSTED');
    expect(refusal.budget.run_target_sequence_evaluations).toBe(1);
    const tools = readTrace(dir).filter((l) => l.type === 'tool');
    expect(tools.map((l) => l.refused_budget)).toEqual([
      'run_target_sequence_evaluations',
      undefined,
      'run_target_calls',
      undefined,
    ]);
    expect(readSummary(dir)).toMatchObject({ stop_reason: 'final_reply', refused_calls: { run_target: 2 } });
  });

  it('ends when no further call can be admitted (tool_calls spent): the refusal is recorded, later calls and requests are not made', async () => {
    api.script([
      { calls: [metadata, metadata, metadata, metadata], usage: usage(100, 0, 10, 0) },
      { text: 'never asked', usage: usage(1, 0, 1, 0) },
    ]);
    const editor = await service.episode({ budgets: { tool_calls: 2 } });
    const dir = traceDir('tool-budget');
    const result = await runEditor({ editor, config: config(), toolset: SERVICE_TOOLSET, traceDir: dir });
    expect(result).toMatchObject({
      stopReason: 'budget',
      turns: 1,
      toolCalls: 3,
      toolErrors: 1,
      refusedCalls: { read_weights: 1 },
    });
    expect(api.requests).toHaveLength(1);
    const tools = readTrace(dir).filter((l) => l.type === 'tool');
    expect(tools).toHaveLength(3);
    expect(JSON.parse(tools[2].output).error.code).toBe('BUDGET_EXHAUSTED');
    expect(result.submitted.status).toBe('submitted');
  });

  it('ends with editor_error when the API fails after the retries, and still submits the current patch', async () => {
    const answered: FakeReply = {
      calls: [call('write_weights', { op: 'fill', tensor: DOWN, slice: [2], value: 1 })],
      usage: usage(100, 0, 10, 0),
    };
    api.script([
      answered,
      { status: 500, message: 'upstream exploded' },
      { status: 500, message: 'upstream exploded again' },
    ]);
    const editor = await service.episode();
    const dir = traceDir('editor-error');
    const result = await runEditor({
      editor,
      config: config({ maxRetries: 1 }),
      toolset: SERVICE_TOOLSET,
      traceDir: dir,
    });
    expect(result).toMatchObject({ stopReason: 'editor_error', turns: 2, toolCalls: 1 });
    expect(result.error).toMatch(/^server 500: .*upstream exploded again/);
    expect(api.requests).toHaveLength(3); // the first try and one retry of turn 2
    expect(result.submitted.patch.ops).toBe(1);
    expect(readTrace(dir).find((l) => l.type === 'error').error).toMatchObject({ kind: 'server', status: 500 });
    expect(readSummary(dir)).toMatchObject({ stop_reason: 'editor_error', error: result.error });
    // The failed request is counted, and as report-token-efficiency counts the trace.
    expect(result.usage).toEqual({ ...totals([answered]), requests: 2, failed_requests: 1 });
    expect(readTraceUsage(path.join(dir, 'trace.jsonl'))).toEqual(result.usage);
  });
});

describe('the toolset', () => {
  it('offers the editor the toolset it is handed and nothing else: a call outside it is UNKNOWN_TOOL and never reaches the service', async () => {
    const readOnly = defineToolset(SERVICE_TOOLSET.tools.filter((t) => t.name === 'read_weights'));
    const write = call('write_weights', { op: 'fill', tensor: DOWN, slice: [0], value: 1 });
    api.script([
      { calls: [write, metadata], usage: usage(100, 0, 10, 0) },
      { text: 'done', usage: usage(1, 0, 1, 0) },
    ]);
    const editor = await service.episode();
    const result = await runEditor({ editor, config: config(), toolset: readOnly, traceDir: traceDir('read-only') });
    expect(result).toMatchObject({ stopReason: 'final_reply', turns: 2, toolCalls: 2, toolErrors: 1 });
    expect(api.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(['read_weights']);
    const [refused, answered] = api.requests[1]!.body.messages.slice(-2).map((m: any) => JSON.parse(m.content));
    expect(refused.error).toEqual({
      code: 'UNKNOWN_TOOL',
      message: 'no tool named "write_weights" (tools: read_weights)',
    });
    expect(answered.error).toBeUndefined();
    expect(result.submitted.patch.ops).toBe(0);
    expect((await service.admin.episode(editor.episodeId)).budget.used.tool_calls).toBe(1);
  });
});
