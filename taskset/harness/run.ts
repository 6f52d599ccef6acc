// The harness's loop (design.md "Taskset"). Each turn: count it with the service, send one request to the editor,
// run every tool call of the reply through the service and hand the results back. A budget's refusal is one such
// result (IWIBench: an editor that over-asks loses the call, not the episode). The episode ends with a reply
// without a tool call, the turn limit, a call refused because no further call can be admitted at all (the
// `tool_calls` budget spent), or an editor API failure after the SDK's retries; in each case the current patch is
// submitted, once. Anything else (the service unreachable, a bug) is thrown without a submit, and editor.json
// records it.
import { PACKAGE_VERSION } from '../../core/version.ts';
import { ServiceError, type EpisodeBrief, type EditorClient, type SubmitReply } from '../service-client.ts';
import type { Toolset } from '../taskset.ts';
import { FAMILY_VERSION } from '../types.ts';
import type { BuiltinEditor } from './builtin.ts';
import { BUILTIN_EDITORS, runBuiltin } from './builtin-editors.ts';
import { ChatEditor } from './chat.ts';
import { editorApiFailure, openaiClient } from './client.ts';
import { builtinName, editorKind, publicConfig, scriptFile, type EditorConfig } from './config.ts';
import type { EditorModel, SentRequest } from './model.ts';
import { firstMessage, systemPrompt } from './prompt.ts';
import { ResponsesEditor } from './responses.ts';
import { loadScript, ScriptEditor, type EditorScript } from './script.ts';
import { callTool } from './tool-call.ts';
import { Tally, type Ending } from './tally.ts';
import { Trace } from './trace.ts';

/** How the editor's part ended (tally.ts), and what the submit answered. */
export type EditorRunResult = Ending & { submitted: SubmitReply };

export type RunEditorOptions = {
  editor: EditorClient;
  config: EditorConfig;
  /** The tools the editor is offered: the Task's (harness/ adds none and knows none of its own). */
  toolset: Toolset;
  /** The attempt's folder: trace.jsonl and editor.json go here. */
  traceDir: string;
  /** Extra `builtin:NAME` editors, next to BUILTIN_EDITORS. */
  builtins?: Record<string, BuiltinEditor>;
};

export async function runEditor({
  editor,
  config,
  toolset,
  traceDir,
  builtins = {},
}: RunEditorOptions): Promise<EditorRunResult> {
  // Setup errors come before the episode is touched.
  const kind = editorKind(config.model);
  const builtin =
    kind === 'builtin' ? findBuiltin(builtinName(config.model), { ...BUILTIN_EDITORS, ...builtins }) : undefined;
  const script = kind === 'script' ? loadScript(scriptFile(config.model)) : undefined;
  const trace = new Trace(traceDir);
  const started = new Date();
  const header = {
    format: 'iwibench-editor/1',
    package_version: PACKAGE_VERSION,
    family_version: FAMILY_VERSION,
    config: publicConfig(config),
    started_at: started.toISOString(),
  };
  try {
    const brief = await editor.brief();
    trace.write({ type: 'brief', brief });
    const ending = builtin
      ? await runBuiltin(builtin, editor, brief, trace)
      : await converse(openModel(config, toolset, brief, script), editor, config, toolset, brief, trace);
    trace.write({
      type: 'stop',
      reason: ending.stopReason,
      ...(ending.error !== undefined ? { error: ending.error } : {}),
    });
    const submitted = await editor.submit();
    trace.write({ type: 'submit', result: submitted });
    const finished = new Date();
    trace.summary({
      ...header,
      target: { model: brief.target.model, revision: brief.target.revision },
      episode_id: brief.episode_id,
      finished_at: finished.toISOString(),
      duration_ms: finished.getTime() - started.getTime(),
      stop_reason: ending.stopReason,
      turns: ending.turns,
      tool_calls: ending.toolCalls,
      tool_errors: ending.toolErrors,
      refused_calls: ending.refusedCalls,
      usage: ending.usage,
      ...(ending.finalReply !== undefined ? { final_reply: ending.finalReply } : {}),
      ...(ending.error !== undefined ? { error: ending.error } : {}),
      submitted,
    });
    return { ...ending, submitted };
  } catch (error) {
    trace.summary({
      ...header,
      failed_at: new Date().toISOString(),
      failure: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    });
    throw error;
  } finally {
    trace.close();
  }
}

function findBuiltin(name: string, registry: Record<string, BuiltinEditor>): BuiltinEditor {
  const builtin = registry[name];
  if (!builtin)
    throw new Error(
      `no built-in editor "builtin:${name}" (known: ${Object.keys(registry)
        .map((n) => `builtin:${n}`)
        .join(', ')})`,
    );
  return builtin;
}

function openModel(
  config: EditorConfig,
  toolset: Toolset,
  brief: EpisodeBrief,
  script: EditorScript | undefined,
): EditorModel {
  if (script) return new ScriptEditor(script, scriptFile(config.model));
  const client = openaiClient(config);
  const system = systemPrompt(brief, config.maxTurns);
  const first = firstMessage(brief);
  return config.api === 'responses'
    ? new ResponsesEditor(client, config, toolset, system, first)
    : new ChatEditor(client, config, toolset, system, first);
}

async function converse(
  model: EditorModel,
  editor: EditorClient,
  config: EditorConfig,
  toolset: Toolset,
  brief: EpisodeBrief,
  trace: Trace,
): Promise<Ending> {
  let budget = brief.budget;
  const tally = new Tally();

  for (;;) {
    if (tally.turns >= config.maxTurns) return tally.end('turn_limit');
    try {
      budget = (await editor.turn()).budget;
    } catch (error) {
      if (error instanceof ServiceError && error.isBudget) return tally.end('turn_limit');
      throw error;
    }
    const turn = tally.turn();

    const request = model.nextRequest();
    trace.write({ type: 'request', turn, api: model.api, body: request });
    const sentAt = performance.now();
    let sent: SentRequest;
    try {
      sent = await model.send(request);
    } catch (error) {
      const failure = editorApiFailure(error);
      if (!failure) throw error;
      trace.write({ type: 'error', turn, duration_ms: elapsed(sentAt), error: failure });
      tally.failedRequest();
      return tally.end('editor_error', {
        error: `${failure.kind}${failure.status !== undefined ? ` ${failure.status}` : ''}: ${failure.message}`,
        failureKind: failure.kind,
      });
    }
    const { reply } = sent;
    tally.request(reply.usage);
    trace.write({
      type: 'response',
      turn,
      duration_ms: elapsed(sentAt),
      request_id: sent.requestId,
      body: sent.response,
      usage: reply.usage,
      tool_calls: reply.toolCalls,
      truncated: reply.truncated,
    });
    if (reply.toolCalls.length === 0) return tally.end('final_reply', { finalReply: reply.text });

    const results: { callId: string; output: string }[] = [];
    let exhausted = false;
    for (const call of reply.toolCalls) {
      const outcome = await callTool(editor, call, { turn, trace, budget, toolset });
      tally.toolCall();
      if (!outcome.ok) tally.toolError();
      if (outcome.refusedBudget !== undefined) tally.refused(call.name);
      budget = outcome.budget ?? budget;
      results.push({ callId: call.id, output: outcome.output });
      exhausted = outcome.refusedBudget === NO_FURTHER_CALL;
      if (exhausted) break; // the reply's later calls would be refused too: they are not run
    }
    model.addToolResults(results);
    // No call of any tool can be admitted any more: the refusal is recorded, and no request follows.
    if (exhausted) return tally.end('budget');
  }
}

/** The budget whose refusal means that no further call of any tool could be admitted (service/budgets.ts). */
const NO_FURTHER_CALL = 'tool_calls';

const elapsed = (since: number): number => Math.round(performance.now() - since);
