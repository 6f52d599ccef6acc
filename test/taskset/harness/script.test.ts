// Editors without an API: `script:FILE.json` and `builtin:NAME`, against a real service on the tiny fixture.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EditorConfigError,
  resolveEditorConfig,
  runEditor,
  type BuiltinEditor,
} from '../../../taskset/harness/index.ts';
import { SERVICE_TOOLSET } from '../../../taskset/taskset.ts';
import { DOWN, lineTypes, readSummary, readTrace, startService, traceDir, type TestService } from './helpers.ts';

let service: TestService;
beforeAll(async () => {
  service = await startService();
});
afterAll(async () => {
  await service?.close();
});

const scratch = mkdtempSync(path.join(os.tmpdir(), 'iwibench-scripts-'));
function scriptFile(name: string, content: unknown): string {
  const file = path.join(scratch, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}
// An empty environment: no OPENAI_API_KEY, no base URL. Nothing may reach an API.
const scripted = (file: string) => resolveEditorConfig({ model: `script:${file}` }, {});

describe('script:FILE.json', () => {
  it('runs "steps", one call per turn, then the final reply, with no API', async () => {
    const file = scriptFile('steps.json', {
      steps: [
        { tool: 'read_weights', arguments: { op: 'slice', tensor: DOWN, slice: [0, [0, 2]] } },
        { tool: 'write_weights', arguments: { op: 'fill', tensor: DOWN, slice: [0, [0, 2]], value: 0.5 } },
      ],
      final: 'scripted edit done',
    });
    const config = scripted(file);
    expect(config).not.toHaveProperty('apiKey');
    const editor = await service.episode();
    const dir = traceDir('steps');
    const result = await runEditor({ editor, config, toolset: SERVICE_TOOLSET, traceDir: dir });

    expect(result).toMatchObject({
      stopReason: 'final_reply',
      turns: 3,
      toolCalls: 2,
      toolErrors: 0,
      finalReply: 'scripted edit done',
    });
    expect(result.usage).toEqual({
      input_tokens: 0,
      cached_input_tokens: 0,
      output_tokens: 0,
      reasoning_tokens: 0,
      requests: 3,
      failed_requests: 0,
    });
    expect(result.submitted.patch.ops).toBe(1);
    expect((await service.admin.episode(editor.episodeId)).budget.used).toMatchObject({ turns: 3, tool_calls: 2 });

    const lines = readTrace(dir);
    expect(lineTypes(lines)).toEqual({ brief: 1, request: 3, response: 3, tool: 2, stop: 1, submit: 1 });
    expect(lines.find((l) => l.type === 'request')).toMatchObject({ api: 'script', body: { script: file, turn: 1 } });
    const read = JSON.parse(lines.find((l) => l.type === 'tool').output);
    expect(read.result.values).toHaveLength(2);
    expect(readSummary(dir)).toMatchObject({ stop_reason: 'final_reply', config: { model: `script:${file}` } });
  });

  it('runs "turns" (several calls in one turn), replays raw argument text, and stops at the turn budget', async () => {
    const file = scriptFile('turns.json', {
      turns: [
        [
          { tool: 'write_weights', arguments: { op: 'scale', tensor: DOWN, slice: [3], factor: 2 } },
          { tool: 'write_weights', arguments: '{"op": "fill", "tensor": ' }, // as a model once wrote it: invalid
        ],
        [{ tool: 'read_weights', arguments: { op: 'summary', tensor: DOWN } }],
        [{ tool: 'read_weights', arguments: { op: 'summary', tensor: DOWN } }],
      ],
      final: 'not reached',
    });
    const editor = await service.episode({ budgets: { turns: 2 } });
    const result = await runEditor({
      editor,
      config: scripted(file),
      toolset: SERVICE_TOOLSET,
      traceDir: traceDir('turns'),
    });
    expect(result).toMatchObject({ stopReason: 'turn_limit', turns: 2, toolCalls: 3, toolErrors: 1 });
    expect(result.finalReply).toBeUndefined();
    expect(result.submitted.patch.ops).toBe(1);
  });

  it('refuses a malformed script when the config is resolved, before any episode exists', () => {
    const cases: [unknown, RegExp][] = [
      [{ steps: [], turns: [], final: '' }, /exactly one of "steps"/],
      [{ steps: [{ tool: 'read_weights', args: {} }] }, /turn 1, call 1: unknown field\(s\) args/],
      [{ turns: [[]] }, /turn 1 has no calls/],
      [{ steps: [{ tool: 'read_weights', arguments: [1] }] }, /"arguments" must be an object/],
      [{ steps: [], finale: 'x' }, /unknown field\(s\) finale/],
      ['{"steps": [', /editor script .*JSON/],
    ];
    for (const [content, message] of cases) {
      const file = scriptFile('bad.json', content);
      expect(() => scripted(file), JSON.stringify(content)).toThrow(message);
    }
    expect(() => scripted(path.join(scratch, 'missing.json'))).toThrow(EditorConfigError);
  });
});

describe('builtin:NAME', () => {
  it('builtin:noop reads the brief, takes one turn, makes no edit and submits', async () => {
    const editor = await service.episode();
    const dir = traceDir('noop');
    const result = await runEditor({
      editor,
      config: resolveEditorConfig({ model: 'builtin:noop' }, {}),
      toolset: SERVICE_TOOLSET,
      traceDir: dir,
    });
    expect(result).toMatchObject({ stopReason: 'final_reply', turns: 1, toolCalls: 0, toolErrors: 0 });
    expect(result.finalReply).toContain('no edit');
    expect(result.submitted.patch).toMatchObject({ ops: 0, changed_parameters: 0 });
    expect(lineTypes(readTrace(dir))).toEqual({ brief: 1, turn: 1, stop: 1, submit: 1 });
  });

  it("counts and traces a built-in's tool calls, and ends on a budget refusal it does not catch", async () => {
    const fillForever: BuiltinEditor = async ({ editor }) => {
      await editor.turn();
      for (let row = 0; ; row++)
        await editor.tool('write_weights', { op: 'fill', tensor: DOWN, slice: [row], value: 0 });
    };
    const editor = await service.episode({ budgets: { tool_calls: 2 } });
    const dir = traceDir('fill');
    const config = resolveEditorConfig({ model: 'builtin:fill-forever' }, {});
    const result = await runEditor({
      editor,
      config,
      toolset: SERVICE_TOOLSET,
      traceDir: dir,
      builtins: { 'fill-forever': fillForever },
    });
    expect(result).toMatchObject({
      stopReason: 'budget',
      turns: 1,
      toolCalls: 3,
      toolErrors: 1,
      refusedCalls: { write_weights: 1 },
    });
    expect(result.submitted.patch.ops).toBe(2);
    const tools = readTrace(dir).filter((l) => l.type === 'tool');
    expect(tools.map((l) => l.ok)).toEqual([true, true, false]);
    expect(tools.map((l) => l.refused_budget)).toEqual([undefined, undefined, 'tool_calls']);
  });

  it('refuses an unknown built-in before touching the episode', async () => {
    const editor = await service.episode();
    const dir = traceDir('unknown');
    const config = resolveEditorConfig({ model: 'builtin:nonexistent' }, {});
    await expect(runEditor({ editor, config, toolset: SERVICE_TOOLSET, traceDir: dir })).rejects.toThrow(
      /no built-in editor "builtin:nonexistent" \(known: builtin:noop, builtin:demo, builtin:rank-one\)/,
    );
    expect(existsSync(dir)).toBe(false);
    expect((await service.admin.episode(editor.episodeId)).status).toBe('active');
  });

  it('builtin:demo uses all four tools and makes one rank-one edit to the tied embedding', async () => {
    const editor = await service.episode();
    const dir = traceDir('demo');
    const result = await runEditor({
      editor,
      config: resolveEditorConfig({ model: 'builtin:demo' }, {}),
      toolset: SERVICE_TOOLSET,
      traceDir: dir,
    });
    expect(result).toMatchObject({ stopReason: 'final_reply', turns: 4, toolCalls: 6, toolErrors: 0 });
    expect(result.submitted.patch.ops).toBe(1);
    expect(
      readTrace(dir)
        .filter((l) => l.type === 'tool')
        .map((l) => l.name),
    ).toEqual(['run_target', 'inspect_target', 'read_weights', 'read_weights', 'write_weights', 'run_target']);
    const summary = await service.admin.episode(editor.episodeId);
    expect(summary.touched_tensors).toEqual(['model.embed_tokens.weight']);
  });
});
