// Scoring of one episode from the raw outputs of the pristine (base) and the patched (edited) model.
//
//   target success = share of target items whose verdict has behaviour && content
//   gain           = max(0, (edited − base) / (1 − base))
//   retention      = share of retention items (general controls, preservation, overrides) that the base answered
//                    correctly and the edited model still answers correctly
//   reward         = gain × retention
//
// Edge cases, chosen so that a number can never be earned by doing nothing:
// - base target success 1.0: no headroom, gain is 0 (such an episode is also ineligible for calibration);
// - a retention part with no base-correct item has rate null ("not measured"); when no retention item at all is
//   base-correct, overall retention is 1 (nothing the base could do was lost). Such an episode is ineligible
//   (eligibility needs ≥ 80 % of preservation and override items correct), so this never inflates a published reward;
// - a no-op (edited outputs identical to base outputs) gets identical verdicts, so gain and reward are exactly 0.
import { passes, runCheck } from './checks/index.ts';
import { gradedItems } from './episode.ts';
import type { EpisodeSpec, Item, ItemKind, Verdict } from './types.ts';

export type Outputs = Record<string, string>;

export type ItemScore = {
  id: string;
  kind: ItemKind;
  base: Verdict & { passed: boolean };
  edited: Verdict & { passed: boolean };
};

/** Base-correct items of one retention part, and how many of them the edited model still gets right. */
export type RetentionCount = { baseCorrect: number; retained: number; total: number };

export type EpisodeScore = {
  items: ItemScore[];
  targetSuccess: { base: number; edited: number; count: number };
  gain: number;
  retention: {
    /** Over all retention items; the factor of the reward. */
    overall: number;
    /** Retention of the 64 general controls, or null when none was base-correct. */
    generalControls: number | null;
    /** Retention of the preservation items (1.0 = no nearby spillover), or null when none was base-correct. */
    spillover: number | null;
    /** Retention of the explicit-instruction overrides, or null when none was base-correct. */
    overrides: number | null;
    counts: {
      generalControls: RetentionCount;
      preservation: RetentionCount;
      overrides: RetentionCount;
      all: RetentionCount;
    };
  };
  reward: number;
  /** The edge cases of this score, in words (empty for an ordinary episode). */
  notes: string[];
};

export function scoreEpisode(spec: EpisodeSpec, base: Outputs, edited: Outputs): EpisodeScore {
  const items = gradedItems(spec);
  assertOutputs(items, base, 'base');
  assertOutputs(items, edited, 'edited');
  const scores = items.map((item): ItemScore => {
    const b = runCheck(item.check, base[item.id]!);
    const e = runCheck(item.check, edited[item.id]!);
    return { id: item.id, kind: item.kind, base: { ...b, passed: passes(b) }, edited: { ...e, passed: passes(e) } };
  });
  const notes: string[] = [];

  const targets = scores.filter((s) => s.kind === 'target');
  const baseSuccess = share(targets.filter((s) => s.base.passed).length, targets.length);
  const editedSuccess = share(targets.filter((s) => s.edited.passed).length, targets.length);
  let gain = 0;
  if (baseSuccess >= 1) notes.push('base target success is 1.0: no headroom, gain is 0');
  else gain = Math.max(0, (editedSuccess - baseSuccess) / (1 - baseSuccess));

  const count = (kinds: ItemKind[]): RetentionCount => {
    const part = scores.filter((s) => kinds.includes(s.kind));
    const correct = part.filter((s) => s.base.passed);
    return { baseCorrect: correct.length, retained: correct.filter((s) => s.edited.passed).length, total: part.length };
  };
  const counts = {
    generalControls: count(['control']),
    preservation: count(['preservation']),
    overrides: count(['override']),
    all: count(['control', 'preservation', 'override']),
  };
  const rate = (c: RetentionCount) => (c.baseCorrect === 0 ? null : c.retained / c.baseCorrect);
  let overall = rate(counts.all);
  if (overall === null) {
    notes.push('no retention item was base-correct: retention is 1 (nothing could be lost); the episode is ineligible');
    overall = 1;
  }
  return {
    items: scores,
    targetSuccess: { base: baseSuccess, edited: editedSuccess, count: targets.length },
    gain,
    retention: {
      overall,
      generalControls: rate(counts.generalControls),
      spillover: rate(counts.preservation),
      overrides: rate(counts.overrides),
      counts,
    },
    reward: gain * overall,
    notes,
  };
}

const share = (n: number, total: number) => (total === 0 ? 0 : n / total);

function assertOutputs(items: Item[], outputs: Outputs, which: string): void {
  const ids = new Set(items.map((i) => i.id));
  const missing = items.filter((i) => typeof outputs[i.id] !== 'string').map((i) => i.id);
  const unknown = Object.keys(outputs).filter((id) => !ids.has(id));
  if (missing.length > 0 || unknown.length > 0) {
    const parts = [
      missing.length ? `missing ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', …' : ''}` : '',
      unknown.length ? `unknown ${unknown.slice(0, 5).join(', ')}` : '',
    ];
    throw new Error(`${which} outputs do not match the episode's items: ${parts.filter(Boolean).join('; ')}`);
  }
}
