// The built-in editors (`builtin:NAME`, the contract in builtin.ts) and their runner: the no-op baseline here, `demo`
// and `rank-one` in their own files. The runner counts with the loop's Tally and traces like the loop, so a built-in's
// editor.json reads as a model editor's.
import { ServiceError, type EpisodeBrief, type EditorClient } from '../service-client.ts';
import type { BuiltinEditor, EpisodeHandle } from './builtin.ts';
import { demo } from './builtin-demo.ts';
import { rankOne } from './builtin-rank-one.ts';
import { Tally, type Ending } from './tally.ts';
import type { Trace } from './trace.ts';

/** Reads the brief and replies at once without an edit: the no-op baseline (zero gain by construction). */
export const noop: BuiltinEditor = async ({ editor, brief }) => {
  await editor.turn();
  return {
    finalReply: `builtin:noop made no edit (episode ${brief.episode_id}, ${brief.manifest.length} manifest lines read).`,
  };
};

export const BUILTIN_EDITORS: Readonly<Record<string, BuiltinEditor>> = Object.freeze({
  noop,
  demo,
  'rank-one': rankOne,
});

/** Run a built-in on the episode, counting and tracing its turns and tool calls as a model editor's. */
export async function runBuiltin(
  builtin: BuiltinEditor,
  editor: EditorClient,
  brief: EpisodeBrief,
  trace: Trace,
): Promise<Ending> {
  const tally = new Tally();
  let refusedBy: 'turn' | 'tool' | undefined;
  const handle: EpisodeHandle = {
    episodeId: editor.episodeId,
    brief: () => editor.brief(),
    async turn() {
      try {
        const counted = await editor.turn();
        trace.write({ type: 'turn', turn: tally.turn() });
        return counted;
      } catch (error) {
        if (error instanceof ServiceError && error.isBudget) refusedBy = 'turn';
        throw error;
      }
    },
    async tool(name, args) {
      const started = performance.now();
      const line = {
        type: 'tool' as const,
        turn: tally.turns,
        call_id: `builtin-${tally.toolCall()}`,
        name,
        arguments: JSON.stringify(args),
      };
      try {
        const response = await editor.tool(name, args);
        trace.write({
          ...line,
          duration_ms: Math.round(performance.now() - started),
          ok: true,
          output: JSON.stringify({ result: response.result, budget: response.budget.remaining }),
        });
        return response;
      } catch (error) {
        tally.toolError();
        const refusedBudget = error instanceof ServiceError ? error.refusedBudget : undefined;
        if (refusedBudget !== undefined) tally.refused(name);
        const output =
          error instanceof ServiceError
            ? JSON.stringify({ error: { code: error.body.code, message: error.body.message } })
            : String(error);
        trace.write({
          ...line,
          duration_ms: Math.round(performance.now() - started),
          ok: false,
          ...(refusedBudget !== undefined ? { refused_budget: refusedBudget } : {}),
          output,
        });
        if (error instanceof ServiceError && error.isBudget) refusedBy = 'tool';
        throw error;
      }
    },
  };
  try {
    const { finalReply } = await builtin({ editor: handle, brief, trace });
    return tally.end('final_reply', { finalReply });
  } catch (error) {
    if (refusedBy && error instanceof ServiceError && error.isBudget)
      return tally.end(refusedBy === 'turn' ? 'turn_limit' : 'budget');
    throw error;
  }
}
