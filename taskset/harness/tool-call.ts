// One tool call of the editor, run through the service. Whatever the service refuses (a ServiceError: a bad slice,
// a schema violation, an exhausted budget) goes back to the editor as the tool result, as do arguments that are not
// a JSON object and unknown tool names, which never reach the service (inspect_ai's ToolError). A budget's refusal
// is such a result too (IWIBench: the editor may act on it); only the caller decides whether the episode can go on.
// Anything else (the service unreachable, a bug) is thrown: it ends the episode.
import { ServiceError, type BudgetState, type EditorClient } from '../service-client.ts';
import type { Toolset } from '../taskset.ts';
import type { ToolCall } from './model.ts';
import type { Trace } from './trace.ts';

export type ToolOutcome = {
  /** The text the editor gets: `{"result", "budget"}` or `{"error": {code, message}, "budget"}`. */
  output: string;
  ok: boolean;
  /** The budget that refused the call (BUDGET_EXHAUSTED, per call or per episode), if one did. */
  refusedBudget?: string;
  /** The budget state after the call, when the service reported one. */
  budget?: BudgetState;
};

type ToolCallContext = { turn: number; trace: Trace; budget: BudgetState; toolset: Toolset };

export async function callTool(editor: EditorClient, call: ToolCall, context: ToolCallContext): Promise<ToolOutcome> {
  const started = performance.now();
  const outcome = await outcomeOf(editor, call, context.budget, context.toolset);
  context.trace.write({
    type: 'tool',
    turn: context.turn,
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
    duration_ms: Math.round(performance.now() - started),
    ok: outcome.ok,
    ...(outcome.refusedBudget !== undefined ? { refused_budget: outcome.refusedBudget } : {}),
    output: outcome.output,
  });
  return outcome;
}

async function outcomeOf(
  editor: EditorClient,
  call: ToolCall,
  budget: BudgetState,
  toolset: Toolset,
): Promise<ToolOutcome> {
  // The harness's own two refusals, which cost no tool-call budget: UNKNOWN_TOOL and ARGUMENTS_INVALID.
  const names = toolset.tools.map((tool) => tool.name);
  if (!names.some((name) => name === call.name)) {
    return refused('UNKNOWN_TOOL', `no tool named ${JSON.stringify(call.name)} (tools: ${names.join(', ')})`, budget);
  }
  const args = parseArguments(call.arguments);
  if (typeof args === 'string') return refused('ARGUMENTS_INVALID', args, budget);
  try {
    const response = await editor.tool(call.name, args);
    return {
      output: JSON.stringify({ result: response.result, budget: response.budget.remaining }),
      ok: true,
      budget: response.budget,
    };
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    const after = (error.body.budget as BudgetState | undefined) ?? budget;
    const code = error.body.code ?? `HTTP_${error.status}`;
    const refusedBudget = error.refusedBudget;
    return {
      ...refused(code, error.body.message ?? error.message, after),
      ...(refusedBudget !== undefined ? { refusedBudget } : {}),
    };
  }
}

function refused(code: string, message: string, budget: BudgetState): ToolOutcome {
  return {
    output: JSON.stringify({ error: { code, message }, budget: budget.remaining }),
    ok: false,
    budget,
  };
}

/** The parsed arguments, or why they are unusable. An empty string means no arguments. */
function parseArguments(text: string): Record<string, unknown> | string {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `the arguments are not valid JSON (${(error as Error).message}): ${truncate(text, 200)}`;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return `the arguments must be a JSON object, got ${truncate(text, 200)}`;
  return value as Record<string, unknown>;
}

function truncate(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length)}…` : text;
}
