// Built-in editors (`--editor-model builtin:NAME`): code that drives an episode itself, with no API, for baselines
// and demos. A built-in calls `editor.turn()` once per reply a model would make and uses the tools as the service
// client does (a refusal throws ServiceError); the harness counts and traces both, and submits when it returns.
// A budget refusal it does not catch ends the episode like a model editor's ('turn_limit' or 'budget').
import { ServiceError, type EpisodeBrief, type EditorClient } from '../service-client.ts';
import type { Ending } from './run.ts';
import { ZERO_USAGE, type Trace } from './trace.ts';
import { demo } from './builtin-demo.ts';
import { rankOne } from './builtin-rank-one.ts';

/** The episode as a built-in sees it: no submit, which is the harness's. */
export type EpisodeHandle = Pick<EditorClient, 'episodeId' | 'brief' | 'turn' | 'tool'>;
export type BuiltinContext = { editor: EpisodeHandle; brief: EpisodeBrief; trace: Trace };
export type BuiltinEditor = (context: BuiltinContext) => Promise<{ finalReply: string }>;

/** Reads the brief and replies at once without an edit: the no-op baseline (zero gain by construction). */
export const noop: BuiltinEditor = async ({ editor, brief }) => {
  await editor.turn();
  return { finalReply: `builtin:noop made no edit (episode ${brief.episode_id}, ${brief.manifest.length} manifest lines read).` };
};

export const BUILTIN_EDITORS: Readonly<Record<string, BuiltinEditor>> = Object.freeze({ noop, demo, 'rank-one': rankOne });

export async function runBuiltin(builtin: BuiltinEditor, editor: EditorClient, brief: EpisodeBrief, trace: Trace): Promise<Ending> {
  let turns = 0;
  let toolCalls = 0;
  let toolErrors = 0;
  let refusedBy: 'turn' | 'tool' | undefined;
  const handle: EpisodeHandle = {
    episodeId: editor.episodeId,
    brief: () => editor.brief(),
    async turn() {
      try {
        const counted = await editor.turn();
        trace.write({ type: 'turn', turn: ++turns });
        return counted;
      } catch (error) {
        if (error instanceof ServiceError && error.isBudget) refusedBy = 'turn';
        throw error;
      }
    },
    async tool(name, args) {
      const started = performance.now();
      const line = { type: 'tool' as const, turn: turns, call_id: `builtin-${++toolCalls}`, name, arguments: JSON.stringify(args) };
      try {
        const response = await editor.tool(name, args);
        trace.write({ ...line, duration_ms: Math.round(performance.now() - started), ok: true, output: JSON.stringify({ result: response.result, budget: response.budget.remaining }) });
        return response;
      } catch (error) {
        toolErrors++;
        const output = error instanceof ServiceError ? JSON.stringify({ error: { code: error.body.code, message: error.body.message } }) : String(error);
        trace.write({ ...line, duration_ms: Math.round(performance.now() - started), ok: false, output });
        if (error instanceof ServiceError && error.isBudget) refusedBy = 'tool';
        throw error;
      }
    },
  };
  const ending = (stopReason: Ending['stopReason'], extra: Partial<Ending> = {}): Ending => ({ stopReason, turns, toolCalls, toolErrors, usage: { ...ZERO_USAGE, requests: 0 }, ...extra });
  try {
    const { finalReply } = await builtin({ editor: handle, brief, trace });
    return ending('final_reply', { finalReply });
  } catch (error) {
    if (refusedBy && error instanceof ServiceError && error.isBudget) return ending(refusedBy === 'turn' ? 'turn_limit' : 'budget');
    throw error;
  }
}
