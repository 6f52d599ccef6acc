// Eligibility of an episode for calibration (families.md): on pristine weights the base must show the capability the
// family builds on, and leave headroom for the edit. The thresholds live here and nowhere else, and are reported
// with every decision.
import { checkParts, passes, runCheck } from './checks/index.ts';
import type { EpisodeSpec } from './types.ts';

export const THRESHOLDS = {
  /** At least this share of preservation and override items answered correctly by the base. */
  minPreservationOverrideCorrect: 0.8,
  /** At least this share of target items with a correct content part (families whose targets have one). */
  minTargetContentCorrect: 0.8,
  /** At most this base target success: the rest is the headroom the edit can gain. */
  maxBaseTargetSuccess: 0.5,
} as const;

export type Eligibility = {
  eligible: boolean;
  reasons: string[];
  measured: {
    preservationOverrideCorrect: number;
    /** null when the family's target checks have no content part (the answer is the behaviour). */
    targetContentCorrect: number | null;
    baseTargetSuccess: number;
  };
  thresholds: typeof THRESHOLDS;
};

/** `baseOutputs` holds the pristine model's output for every terminal item (controls are not needed). */
export function eligibility(spec: EpisodeSpec, baseOutputs: Record<string, string>): Eligibility {
  const output = (id: string) => {
    const text = baseOutputs[id];
    if (typeof text !== 'string') throw new Error(`eligibility: no base output for item "${id}"`);
    return text;
  };
  const kept = [...spec.terminal.preservation, ...spec.terminal.override];
  const keptCorrect = kept.filter((item) => passes(runCheck(item.check, output(item.id)))).length / kept.length;

  const targets = spec.terminal.target.map((item) => ({ item, verdict: runCheck(item.check, output(item.id)) }));
  const withContent = targets.filter(({ item }) => checkParts(item.check).content);
  const contentCorrect =
    withContent.length === 0 ? null : withContent.filter(({ verdict }) => verdict.content).length / withContent.length;
  const baseSuccess = targets.filter(({ verdict }) => passes(verdict)).length / targets.length;

  const reasons: string[] = [];
  const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
  if (keptCorrect < THRESHOLDS.minPreservationOverrideCorrect) {
    reasons.push(
      `base answers ${pct(keptCorrect)} of preservation and override items correctly, needs ≥ ${pct(THRESHOLDS.minPreservationOverrideCorrect)}`,
    );
  }
  if (contentCorrect !== null && contentCorrect < THRESHOLDS.minTargetContentCorrect) {
    reasons.push(
      `base gets the content of ${pct(contentCorrect)} of target items right, needs ≥ ${pct(THRESHOLDS.minTargetContentCorrect)}`,
    );
  }
  if (baseSuccess > THRESHOLDS.maxBaseTargetSuccess) {
    reasons.push(
      `base target success is ${pct(baseSuccess)}, must be ≤ ${pct(THRESHOLDS.maxBaseTargetSuccess)} (no headroom)`,
    );
  }
  return {
    eligible: reasons.length === 0,
    reasons,
    measured: {
      preservationOverrideCorrect: keptCorrect,
      targetContentCorrect: contentCorrect,
      baseTargetSuccess: baseSuccess,
    },
    thresholds: THRESHOLDS,
  };
}
