// The target questions a replay scores the patch on: those of the results it replays (IWIBench's replay keeps the
// questions and changes only the controls). Today's family code regenerates the episode; where it would now ask
// anything else (another item, prompt, token cap or check), the replay is refused naming the first difference,
// unless the caller asks for today's questions explicitly (`replay-patch --regenerate`).
import type { ItemResult } from './evaluation.ts';
import type { EpisodeSpec, Item } from './types.ts';

/** The graded fields of an item, as results.json records them. */
const recordedForm = (item: Item) => ({
  kind: item.kind,
  messages: item.messages,
  max_new_tokens: item.maxNewTokens,
  check: item.check,
});

/**
 * The recorded terminal items (target, preservation, override; controls are the replay's own), as today's `spec`
 * generates them, or the first one it would generate differently (`difference`, one line).
 */
export function recordedTerminal(
  recorded: ItemResult[],
  spec: EpisodeSpec,
): { terminal: EpisodeSpec['terminal'] } | { difference: string } {
  const today = new Map(
    [...spec.terminal.target, ...spec.terminal.preservation, ...spec.terminal.override].map((i) => [i.id, i]),
  );
  const terminal: EpisodeSpec['terminal'] = { target: [], preservation: [], override: [] };
  for (const item of recorded) {
    if (item.kind === 'control') continue;
    const generated = today.get(item.id);
    if (!generated) return { difference: `item ${item.id} (${item.kind}) is no longer generated` };
    const now = recordedForm(generated);
    for (const field of ['kind', 'messages', 'max_new_tokens', 'check'] as const) {
      const [then, again] = [JSON.stringify(item[field]), JSON.stringify(now[field])];
      if (then !== again) return { difference: `item ${item.id}: ${field} was ${clip(then)}, now ${clip(again)}` };
    }
    terminal[generated.kind as keyof EpisodeSpec['terminal']].push(generated);
  }
  if (terminal.target.length === 0) return { difference: 'the results record no target item' };
  return { terminal };
}

const clip = (text: string) => (text.length > 160 ? `${text.slice(0, 160)}…` : text);
