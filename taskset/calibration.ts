// Calibration: on pristine weights, seeds ascending, each of the ten families until it has the requested number of
// distinct eligible parameter sets (eligibility.ts: capability and headroom, thresholds in one place). Duplicated
// parameter sets are skipped, not re-run. The result lists every examined seed with its measurements and reasons,
// so a family that cannot be calibrated on a target says why.
import { readFileSync } from 'node:fs';
import { textRun, type ItemEvaluator } from '../service/evaluate.ts';
import type { Tokenizer } from '../engine/index.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { THRESHOLDS } from './eligibility.ts';
import type { Taskset } from './taskset.ts';
import { FAMILY_IDS, FAMILY_VERSION, type FamilyId } from './types.ts';

export const CALIBRATION_FORMAT = 'iwibench-calibration/1';

export type ExaminedSeed = {
  seed: number;
  params_key: string;
  eligible: boolean;
  reasons: string[];
  measured: unknown;
  duplicate_of?: number;
};

export type Calibration = {
  format: typeof CALIBRATION_FORMAT;
  versions: { package: string; family_version: string; model_id: string; revision: string };
  args: Record<string, unknown>;
  thresholds: typeof THRESHOLDS;
  seeds: number;
  eligible_per_family: number;
  families: Record<string, { selected: { seed: number; params_key: string }[]; examined: ExaminedSeed[] }>;
  /** The selected episodes, family by family: what run-pilot runs. */
  episodes: { family: FamilyId; seed: number; params_key: string }[];
  short: FamilyId[];
  created_at: string;
};

export type CalibrateOptions = {
  evaluator: ItemEvaluator;
  /** The checkpoint's tokenizer: encodes the items, decodes the outputs. */
  tokenizer: Tokenizer;
  taskset: Taskset;
  seeds: number;
  eligiblePerFamily: number;
  families?: readonly FamilyId[];
  args?: Record<string, unknown>;
  onProgress?: (event: { family: string; seed: number; eligible: boolean; selected: number }) => void;
};

export async function calibrate(options: CalibrateOptions): Promise<Calibration> {
  const families: Calibration['families'] = {};
  const episodes: Calibration['episodes'] = [];
  for (const family of options.families ?? FAMILY_IDS) {
    const examined: ExaminedSeed[] = [];
    const selected: { seed: number; params_key: string }[] = [];
    const firstSeedOf = new Map<string, number>();
    for (let seed = 0; seed < options.seeds && selected.length < options.eligiblePerFamily; seed++) {
      const task = options.taskset.task({ family, seed });
      const { spec } = task;
      const earlier = firstSeedOf.get(spec.paramsKey);
      if (earlier !== undefined) {
        examined.push({
          seed,
          params_key: spec.paramsKey,
          eligible: false,
          reasons: [`same parameter set as seed ${earlier}`],
          measured: null,
          duplicate_of: earlier,
        });
        continue;
      }
      firstSeedOf.set(spec.paramsKey, seed);
      // Eligibility needs the terminal items only; the general controls are the evaluation's business.
      const items = [...spec.terminal.target, ...spec.terminal.preservation, ...spec.terminal.override];
      const { outputs } = await textRun(
        options.tokenizer,
        items.map((item) => ({ id: item.id, messages: item.messages, max_new_tokens: item.maxNewTokens })),
        (tokens) => options.evaluator.run(tokens),
      );
      const verdict = task.eligibility(Object.fromEntries(Object.entries(outputs).map(([id, o]) => [id, o.text])));
      examined.push({
        seed,
        params_key: spec.paramsKey,
        eligible: verdict.eligible,
        reasons: verdict.reasons,
        measured: verdict.measured,
      });
      if (verdict.eligible) {
        selected.push({ seed, params_key: spec.paramsKey });
        episodes.push({ family, seed, params_key: spec.paramsKey });
      }
      options.onProgress?.({ family, seed, eligible: verdict.eligible, selected: selected.length });
    }
    families[family] = { selected, examined };
  }
  const short = Object.entries(families)
    .filter(([, f]) => f.selected.length < options.eligiblePerFamily)
    .map(([family]) => family as FamilyId);
  return {
    format: CALIBRATION_FORMAT,
    versions: {
      package: PACKAGE_VERSION,
      family_version: FAMILY_VERSION,
      ...options.evaluator.model,
      model_id: options.evaluator.model.id,
      revision: options.evaluator.model.revision,
    },
    args: options.args ?? {},
    thresholds: THRESHOLDS,
    seeds: options.seeds,
    eligible_per_family: options.eligiblePerFamily,
    families,
    episodes,
    short,
    created_at: new Date().toISOString(),
  };
}

/** A calibration file as `calibrate` wrote it (run-pilot's and `pilot enqueue`'s input). */
export function readCalibration(file: string): Calibration {
  const calibration = JSON.parse(readFileSync(file, 'utf8')) as Calibration;
  if (!Array.isArray(calibration.episodes)) throw new Error(`${file} is not a calibration file (no "episodes")`);
  return calibration;
}
