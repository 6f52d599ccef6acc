// The report's two tables: one row per attempt, and means per (target, editor, family) and per (target, editor)
// with a 95 % bootstrap interval on the mean reward. A target is a model id at one revision. Rows are sorted, and
// the bootstrap draws from the project's seeded generator (core/random.ts), so the same results always give the same
// tables.
import { Rng } from '../core/random.ts';
import { compare, type LabelledAttempt } from './collect.ts';

export type AttemptRow = {
  model_id: string;
  revision: string;
  editor: string;
  editor_model: string | null;
  family: string;
  seed: number;
  control_seed: number;
  params_key: string;
  attempt: string;
  reward: number;
  gain: number;
  target_success_base: number;
  target_success_edited: number;
  retention_overall: number;
  /** Null where the part had no base-correct item (scoring.ts: "not measured"). */
  retention_general_controls: number | null;
  retention_spillover: number | null;
  retention_overrides: number | null;
  /** Patch statistics; null when the results have no patch. */
  changed_parameters: number | null;
  tensors_changed: number | null;
  patch_ops: number | null;
  /** ‖ΔW‖_F of the whole patch: √(Σ over tensors of ‖ΔW_t‖_F²), the tensors being disjoint. */
  delta_frobenius: number | null;
  /** The largest per-tensor ‖ΔW_t‖_F / ‖W_t‖_F. */
  max_relative_delta: number | null;
  /** Resource use; null for a bare evaluation. */
  turns: number | null;
  tool_calls: number | null;
  forward_tokens: number | null;
  /** The arithmetic the patch was scored in (results of before the precision setting: float32). */
  precision: string;
  /** Its name and version (engine/arithmetic.ts; empty for results of before the name). */
  arithmetic: string;
  package_version: string;
  family_version: string;
  results_json: string;
};

export const ATTEMPT_COLUMNS = [
  'model_id',
  'revision',
  'editor',
  'editor_model',
  'family',
  'seed',
  'control_seed',
  'params_key',
  'attempt',
  'reward',
  'gain',
  'target_success_base',
  'target_success_edited',
  'retention_overall',
  'retention_general_controls',
  'retention_spillover',
  'retention_overrides',
  'changed_parameters',
  'tensors_changed',
  'patch_ops',
  'delta_frobenius',
  'max_relative_delta',
  'turns',
  'tool_calls',
  'forward_tokens',
  'precision',
  'arithmetic',
  'package_version',
  'family_version',
  'results_json',
] as const satisfies readonly (keyof AttemptRow)[];

/** The family column of the row that aggregates every family of a (target, editor). */
export const ALL_FAMILIES = 'all';

export type SummaryRow = {
  model_id: string;
  revision: string;
  editor: string;
  family: string;
  n: number;
  mean_reward: number;
  reward_ci95_low: number;
  reward_ci95_high: number;
  mean_gain: number;
  mean_retention: number;
};

export const SUMMARY_COLUMNS = [
  'model_id',
  'revision',
  'editor',
  'family',
  'n',
  'mean_reward',
  'reward_ci95_low',
  'reward_ci95_high',
  'mean_gain',
  'mean_retention',
] as const satisfies readonly (keyof SummaryRow)[];

/** Percentile bootstrap of the mean: resamples with replacement, interval from the 2.5 % and 97.5 % quantiles. */
export const BOOTSTRAP = { resamples: 10_000, level: 0.95, seed: 'iwibench-report/bootstrap' } as const;

export function attemptRow(a: LabelledAttempt): AttemptRow {
  const { versions, episode, score, patch, resources } = a.results;
  const tensors = patch
    ? Object.values(patch.tensors as Record<string, { delta_frobenius: number; relative_delta: number | null }>)
    : [];
  const relative = tensors.map((t) => t.relative_delta).filter((r): r is number => r !== null);
  return {
    model_id: versions.model_id,
    revision: versions.revision,
    editor: a.editor,
    editor_model: a.results.editor?.model ?? null,
    family: episode.family,
    seed: episode.seed,
    control_seed: episode.control_seed,
    params_key: episode.params_key,
    attempt: a.attempt,
    reward: score.reward,
    gain: score.gain,
    target_success_base: score.targetSuccess.base,
    target_success_edited: score.targetSuccess.edited,
    retention_overall: score.retention.overall,
    retention_general_controls: score.retention.generalControls,
    retention_spillover: score.retention.spillover,
    retention_overrides: score.retention.overrides,
    changed_parameters: patch ? patch.changed_parameters : null,
    tensors_changed: patch ? tensors.length : null,
    patch_ops: patch ? patch.ops : null,
    delta_frobenius: patch ? Math.sqrt(tensors.reduce((s, t) => s + t.delta_frobenius ** 2, 0)) : null,
    max_relative_delta: relative.length > 0 ? Math.max(...relative) : null,
    turns: resources?.turns ?? null,
    tool_calls: resources?.tool_calls ?? null,
    forward_tokens: resources?.forward_tokens ?? null,
    precision: a.results.evaluation?.precision ?? 'float32',
    arithmetic: a.results.evaluation?.arithmetic ?? '',
    package_version: versions.package,
    family_version: versions.family_version,
    results_json: a.file,
  };
}

/** One row per attempt, sorted by target, editor, family, seed, attempt and file. */
export function attemptRows(attempts: readonly LabelledAttempt[]): AttemptRow[] {
  const key = (r: AttemptRow) => [r.model_id, r.revision, r.editor, r.family];
  return attempts
    .map(attemptRow)
    .sort(
      (a, b) =>
        compareKeys(key(a), key(b)) ||
        a.seed - b.seed ||
        compare(a.attempt, b.attempt) ||
        compare(a.results_json, b.results_json),
    );
}

/** Means per (target, editor, family), then per (target, editor) over all families (family "all", listed last). */
export function summaryRows(rows: readonly AttemptRow[]): SummaryRow[] {
  const groups = new Map<string, { key: [string, string, string, string]; rows: AttemptRow[] }>();
  const add = (key: [string, string, string, string], row: AttemptRow) => {
    const id = JSON.stringify(key);
    if (!groups.has(id)) groups.set(id, { key, rows: [] });
    groups.get(id)!.rows.push(row);
  };
  for (const r of rows) {
    add([r.model_id, r.revision, r.editor, r.family], r);
    add([r.model_id, r.revision, r.editor, ALL_FAMILIES], r);
  }
  const order = ([m, v, e, f]: string[]) => [m!, v!, e!, f === ALL_FAMILIES ? '1' : '0', f!]; // "all" after every family
  return [...groups.values()]
    .sort((a, b) => compareKeys(order(a.key), order(b.key)))
    .map(({ key: [model_id, revision, editor, family], rows: group }) => {
      const rewards = group.map((r) => r.reward);
      const [low, high] = bootstrapMeanCi(rewards, `${BOOTSTRAP.seed}/${model_id}@${revision}/${editor}/${family}`);
      return {
        model_id,
        revision,
        editor,
        family,
        n: group.length,
        mean_reward: mean(rewards),
        reward_ci95_low: low,
        reward_ci95_high: high,
        mean_gain: mean(group.map((r) => r.gain)),
        mean_retention: mean(group.map((r) => r.retention_overall)),
      };
    });
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) throw new Error('mean of no values');
  return values.reduce((s, v) => s + v, 0) / values.length;
}

/**
 * 95 % percentile-bootstrap interval of the mean. Each group draws from its own generator keyed by `key`, so adding
 * a group never changes another group's interval.
 */
export function bootstrapMeanCi(
  values: readonly number[],
  key: string,
  resamples: number = BOOTSTRAP.resamples,
): [number, number] {
  if (values.length === 0) throw new Error('bootstrap of no values');
  const rng = new Rng(key);
  const n = values.length;
  const means = new Float64Array(resamples);
  for (let b = 0; b < resamples; b++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[rng.int(n)]!;
    means[b] = sum / n;
  }
  means.sort();
  const tail = (1 - BOOTSTRAP.level) / 2;
  return [quantile(means, tail), quantile(means, 1 - tail)];
}

/** Linear interpolation between order statistics (Hyndman & Fan type 7, R's and NumPy's default). */
function quantile(sorted: Float64Array, p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

function compareKeys(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < a.length; i++) {
    const c = compare(a[i]!, b[i]!);
    if (c !== 0) return c;
  }
  return 0;
}
