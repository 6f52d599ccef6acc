// `mmlu-pro compare A B`: per-category accuracy of two result folders (say pristine and patched) on the questions
// both answered, the difference B − A, and McNemar's exact test on the paired outcomes (stats.ts).
// Outcomes are re-scored from each record's stored `pred` under the folder's own scoring profile (run.json; a folder
// the Python scripts wrote is "original"). Folders of different profiles are refused unless asked for: their
// numbers are not comparable (`mmlu-pro rescore` makes a copy under another profile).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CATEGORIES, type Category } from './data.ts';
import { questionKey, ResultStore } from './results.ts';
import { isScoringProfile, scoreOne, type ScoringProfile } from './score.ts';
import { mcnemarExact } from './stats.ts';

export type PairedScore = {
  category: string;
  /** Questions answered in both folders; the accuracies below are over these only. */
  paired: number;
  a_correct: number;
  b_correct: number;
  a_accuracy: number | null;
  b_accuracy: number | null;
  /** b_accuracy − a_accuracy, as a ratio (0.012 = 1.2 points). */
  difference: number | null;
  /** Discordant pairs: right in A only, right in B only. */
  a_only_correct: number;
  b_only_correct: number;
  p_value: number;
  /** Answered in one folder but not the other: left out of the comparison. */
  unpaired_a: number;
  unpaired_b: number;
};

export type Comparison = {
  a: string;
  b: string;
  scoring: { a: ScoringProfile; b: ScoringProfile };
  test: string;
  categories: PairedScore[];
  overall: PairedScore;
  /** Answer settings (run.json) that differ between the folders, e.g. the model. */
  settings_differences: string[];
};

const SUFFIXES = ['_result.json', '_result.journal.jsonl'];

/** Correct/incorrect per question key, per category, for every category with results in `dir`. */
export function loadOutcomes(dir: string): Map<Category, Map<string, boolean>> {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`compare: ${dir} is not a folder`);
  const categories = new Set<Category>();
  for (const name of readdirSync(dir)) {
    for (const suffix of SUFFIXES) {
      const category = name.endsWith(suffix) ? name.slice(0, -suffix.length) : null;
      if (category !== null && (CATEGORIES as readonly string[]).includes(category))
        categories.add(category as Category);
    }
  }
  if (categories.size === 0) throw new Error(`compare: no <category>_result.json in ${dir}`);
  const store = new ResultStore(dir);
  const outcomes = new Map<Category, Map<string, boolean>>();
  const scoring = scoringOf(dir);
  for (const category of CATEGORIES.filter((c) => categories.has(c))) {
    outcomes.set(category, new Map(store.read(category).map((r) => [questionKey(r), scoreOne(r, scoring).correct])));
  }
  return outcomes;
}

/** The profile a folder's `pred`s were extracted with: run.json's, or "original" for a folder without one. */
export function scoringOf(dir: string): ScoringProfile {
  const file = path.join(dir, 'run.json');
  if (!existsSync(file)) return 'original';
  const scoring =
    (JSON.parse(readFileSync(file, 'utf8')) as { config?: { test?: { scoring?: unknown } } }).config?.test?.scoring ??
    'lenient';
  if (!isScoringProfile(scoring))
    throw new Error(`compare: ${file} names an unknown scoring profile ${JSON.stringify(scoring)}`);
  return scoring; // run.json without a profile: written before profiles existed, by the lenient rules
}

export function compareFolders(a: string, b: string, options: { allowDifferentScoring?: boolean } = {}): Comparison {
  const scoring = { a: scoringOf(a), b: scoringOf(b) };
  if (scoring.a !== scoring.b && !options.allowDifferentScoring) {
    throw new Error(
      `compare: ${a} was scored "${scoring.a}" and ${b} "${scoring.b}"; rescore one (mmlu-pro rescore DIR --scoring P) ` +
        'or pass --allow_different_scoring',
    );
  }
  const outcomesA = loadOutcomes(a);
  const outcomesB = loadOutcomes(b);
  const categories: PairedScore[] = [];
  const pooledA = new Map<string, boolean>();
  const pooledB = new Map<string, boolean>();
  for (const category of CATEGORIES) {
    const inA = outcomesA.get(category);
    const inB = outcomesB.get(category);
    if (!inA && !inB) continue;
    categories.push(pairedScore(category, inA ?? new Map(), inB ?? new Map()));
    for (const [key, correct] of inA ?? []) pooledA.set(`${category}\u0000${key}`, correct);
    for (const [key, correct] of inB ?? []) pooledB.set(`${category}\u0000${key}`, correct);
  }
  return {
    a,
    b,
    scoring,
    test: "McNemar's exact test (two-sided, binomial on discordant pairs)",
    categories,
    overall: pairedScore('overall', pooledA, pooledB),
    settings_differences: settingsDifferences(a, b),
  };
}

export function pairedScore(category: string, a: Map<string, boolean>, b: Map<string, boolean>): PairedScore {
  let [paired, aCorrect, bCorrect, aOnly, bOnly] = [0, 0, 0, 0, 0];
  for (const [key, rightA] of a) {
    const rightB = b.get(key);
    if (rightB === undefined) continue;
    paired += 1;
    if (rightA) aCorrect += 1;
    if (rightB) bCorrect += 1;
    if (rightA && !rightB) aOnly += 1;
    if (rightB && !rightA) bOnly += 1;
  }
  const ratio = (x: number) => (paired === 0 ? null : x / paired);
  return {
    category,
    paired,
    a_correct: aCorrect,
    b_correct: bCorrect,
    a_accuracy: ratio(aCorrect),
    b_accuracy: ratio(bCorrect),
    difference: paired === 0 ? null : (bCorrect - aCorrect) / paired,
    a_only_correct: aOnly,
    b_only_correct: bOnly,
    p_value: mcnemarExact(aOnly, bOnly),
    unpaired_a: a.size - paired,
    unpaired_b: b.size - paired,
  };
}

function settingsDifferences(a: string, b: string): string[] {
  const settings = (dir: string): Record<string, unknown> | null => {
    const file = path.join(dir, 'run.json');
    if (!existsSync(file)) return null;
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { settings?: Record<string, unknown> }).settings ?? null;
    } catch {
      return null;
    }
  };
  const [sa, sb] = [settings(a), settings(b)];
  if (!sa || !sb) return ['no readable run.json in one folder: settings not compared'];
  const keys = [...new Set([...Object.keys(sa), ...Object.keys(sb)])];
  return keys
    .filter((k) => JSON.stringify(sa[k]) !== JSON.stringify(sb[k]))
    .map((k) => `${k}: ${JSON.stringify(sa[k])} vs ${JSON.stringify(sb[k])}`);
}

/** The comparison as a markdown table for people (percentages rounded here only). */
export function comparisonTable(c: Comparison): string {
  const pct = (x: number | null) => (x === null ? 'n/a' : (x * 100).toFixed(2));
  const signed = (x: number | null) => (x === null ? 'n/a' : `${x >= 0 ? '+' : ''}${(x * 100).toFixed(2)}`);
  const rows = [...c.categories, c.overall].map(
    (s) =>
      `| ${s.category} | ${s.paired} | ${pct(s.a_accuracy)} | ${pct(s.b_accuracy)} | ${signed(s.difference)} | ${s.a_only_correct} | ${s.b_only_correct} | ${s.p_value.toPrecision(3)} |`,
  );
  return [
    `A: ${c.a} (scoring ${c.scoring.a})`,
    `B: ${c.b} (scoring ${c.scoring.b})`,
    '| category | paired | A % | B % | B − A | right in A only | right in B only | p (McNemar exact) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    ...c.settings_differences.map((d) => `settings differ: ${d}`),
  ].join('\n');
}
