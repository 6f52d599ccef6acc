// The scripted editor (`--editor-model script:FILE.json`): a fixed list of tool calls, then a final reply, with no
// API. Each step is one turn, so turns, budgets and the trace are exactly those of a model editor; it is for tests,
// demos and replaying a transcript. Format (README.md):
//   {"steps": [{"tool": "read_weights", "arguments": {...}}, ...], "final": "text"}
//   {"turns": [[call, call], [call], ...], "final": "text"}   (several calls in one turn)
// `arguments` is an object, or a string sent verbatim as the raw argument text (to replay invalid JSON too).
import { readFileSync } from 'node:fs';
import type { EditorModel, SentRequest, ToolCall } from './model.ts';
import { ZERO_USAGE } from './trace.ts';

export type ScriptCall = { tool: string; arguments: Record<string, unknown> | string };
export type EditorScript = { turns: ScriptCall[][]; final: string };

export class ScriptError extends Error {
  override name = 'ScriptError';
}

export function loadScript(file: string): EditorScript {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ScriptError(`editor script ${file}: ${(error as Error).message}`);
  }
  return parseScript(raw, file);
}

export function parseScript(raw: unknown, where = 'editor script'): EditorScript {
  const fail = (message: string): never => {
    throw new ScriptError(`${where}: ${message}`);
  };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    fail('must be a JSON object with "steps" or "turns", and "final"');
  const object = raw as Record<string, unknown>;
  const unknown = Object.keys(object).filter((key) => !['steps', 'turns', 'final'].includes(key));
  if (unknown.length > 0) fail(`unknown field(s) ${unknown.join(', ')} (fields: steps or turns, final)`);
  if ((object.steps === undefined) === (object.turns === undefined))
    fail('needs exactly one of "steps" (one call per turn) and "turns" (lists of calls)');
  if (object.final !== undefined && typeof object.final !== 'string') fail('"final" must be a string');

  const turnsRaw =
    object.steps !== undefined
      ? asArray(object.steps, '"steps"', fail).map((step) => [step])
      : asArray(object.turns, '"turns"', fail);
  const turns = turnsRaw.map((turn, t) => {
    const calls = asArray(turn, `turn ${t + 1}`, fail);
    if (calls.length === 0) fail(`turn ${t + 1} has no calls (a turn without calls is the final reply: use "final")`);
    return calls.map((call, c) => parseCall(call, `turn ${t + 1}, call ${c + 1}`, fail));
  });
  return { turns, final: (object.final as string | undefined) ?? '' };
}

function asArray(value: unknown, what: string, fail: (message: string) => never): unknown[] {
  return Array.isArray(value) ? value : fail(`${what} must be an array`);
}

function parseCall(value: unknown, where: string, fail: (message: string) => never): ScriptCall {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return fail(`${where} must be {"tool": name, "arguments": {...}}`);
  const { tool, arguments: args, ...rest } = value as Record<string, unknown>;
  if (Object.keys(rest).length > 0)
    fail(`${where}: unknown field(s) ${Object.keys(rest).join(', ')} (fields: tool, arguments)`);
  if (typeof tool !== 'string' || tool === '') fail(`${where}: "tool" must be a tool name`);
  const argsOk = typeof args === 'string' || (args !== null && typeof args === 'object' && !Array.isArray(args));
  if (args !== undefined && !argsOk) fail(`${where}: "arguments" must be an object or a string of raw JSON`);
  return { tool: tool as string, arguments: (args as ScriptCall['arguments'] | undefined) ?? {} };
}

/** The request a script "sends": which file and step, so the trace reads like a model editor's. */
export type ScriptRequest = { script: string; turn: number };

export class ScriptEditor implements EditorModel<ScriptRequest> {
  readonly api = 'script';
  private next = 0;

  constructor(
    private readonly script: EditorScript,
    private readonly file: string,
  ) {}

  nextRequest(): ScriptRequest {
    return { script: this.file, turn: this.next + 1 };
  }

  async send(request: ScriptRequest): Promise<SentRequest> {
    const calls = this.script.turns[this.next++];
    const toolCalls: ToolCall[] = (calls ?? []).map((call, i) => ({
      id: `script-${request.turn}-${i + 1}`,
      name: call.tool,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
    const text = calls ? '' : this.script.final;
    return {
      response: { tool_calls: toolCalls, text },
      requestId: null,
      reply: { text, toolCalls, usage: { ...ZERO_USAGE }, truncated: false },
    };
  }

  addToolResults(): void {
    // A script does not read results.
  }
}
