// Editor tokens per attempt, joined to the attempt's reward: per-call usage is summed from the attempt's native
// trace (trace.jsonl, taskset/harness/trace.ts), the reward and target forward tokens come from the report's
// results.csv. Input tokens include cached input and output tokens include reasoning (the harness's normalised
// usage), so editor tokens = input + output, and the cached and reasoning parts are shown apart, not added.
// Target forward tokens (what the editor's tool calls ran on the target) are a different resource and are never
// added to editor tokens.
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { EditorUsage, ResultsFile } from '../taskset/index.ts';
import { RESULTS_FILE, compare, readResults } from './collect.ts';
import { mean } from './table.ts';
import { TRACE_FILE, readTraceLines, type TraceLines } from './trace-file.ts';

/** The results.csv columns the join reads. */
export const RESULTS_CSV_COLUMNS = [
  'model_id',
  'revision',
  'editor',
  'family',
  'seed',
  'attempt',
  'reward',
  'forward_tokens',
] as const;
export type ResultsCsvRecord = Record<(typeof RESULTS_CSV_COLUMNS)[number], string>;

/**
 * A completed attempt folder: it holds results.json, and its trace must be at `trace`. `usage` is the trace's, or
 * why it cannot be counted, where the caller has read the trace already (the report, for the attempt's page).
 */
export type AttemptFolder = {
  dir: string;
  id: string;
  results: ResultsFile;
  trace: string;
  usage?: EditorUsage | Error;
};

export type EfficiencyRow = {
  /** "attempt", or an aggregate: "family" (one target and family) or "all" (one target, every family). */
  scope: 'attempt' | 'family' | 'all';
  editor: string;
  model_id: string;
  revision: string;
  family: string;
  seed: number | null;
  attempt: string | null;
  n: number;
  /** Token and request columns are sums over the scope's attempts. */
  editor_requests: number;
  editor_failed_requests: number;
  input_tokens: number;
  cached_input_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  editor_tokens: number;
  mean_reward: number;
  /** 1000 × Σ reward / Σ editor tokens (a ratio of sums, so cheap attempts do not dominate); null with no tokens. */
  reward_per_1k_editor_tokens: number | null;
  /** Σ target forward tokens; null when an attempt's results have no resource record. */
  target_forward_tokens: number | null;
};

export const EFFICIENCY_COLUMNS = [
  'scope',
  'editor',
  'model_id',
  'revision',
  'family',
  'seed',
  'attempt',
  'n',
  'editor_requests',
  'editor_failed_requests',
  'input_tokens',
  'cached_input_tokens',
  'output_tokens',
  'reasoning_tokens',
  'editor_tokens',
  'mean_reward',
  'reward_per_1k_editor_tokens',
  'target_forward_tokens',
] as const satisfies readonly (keyof EfficiencyRow)[];

/** Sums the usage of every response in a trace; counts requests and failed requests (after the SDK's retries). */
export function readTraceUsage(file: string): EditorUsage {
  return traceUsage(readTraceLines(file));
}

/** readTraceUsage of a trace already read; throws at its first line that is not JSON or holds a malformed usage. */
export function traceUsage({ file, entries, skipped }: TraceLines): EditorUsage {
  const total: EditorUsage = {
    requests: 0,
    failed_requests: 0,
    input_tokens: 0,
    cached_input_tokens: 0,
    output_tokens: 0,
    reasoning_tokens: 0,
  };
  const torn = skipped.find((s) => s.error !== undefined);
  for (const entry of entries) {
    if (torn && torn.line < entry.line) break;
    if (entry.type === 'request') total.requests++;
    else if (entry.type === 'error') total.failed_requests++;
    else if (entry.type === 'response') {
      for (const key of ['input_tokens', 'cached_input_tokens', 'output_tokens', 'reasoning_tokens'] as const) {
        const value = (entry.usage as Record<string, unknown> | undefined)?.[key];
        if (!Number.isInteger(value) || (value as number) < 0)
          throw new Error(
            `${file}:${entry.line}: response usage.${key} is ${JSON.stringify(value)}, expected a non-negative integer`,
          );
        total[key] += value as number;
      }
    }
  }
  if (torn) throw new Error(`${file}:${torn.line} is not JSON: ${torn.error}`);
  return total;
}

/**
 * An attempt's editor usage, as its page, the scoreboard and this join show it: its trace's (traceUsage), or why the
 * trace cannot be counted; with no trace, what its results.json recorded (the harness counts by the same rule), else
 * null.
 */
export function attemptUsage(trace: TraceLines | null, results: ResultsFile): EditorUsage | Error | null {
  if (!trace) return results.resources?.editor ?? null;
  try {
    return traceUsage(trace);
  } catch (error) {
    return error as Error;
  }
}

/**
 * Attempt folders are the subfolders of each ATTEMPTS_DIR; one with results.json is complete, one without is an
 * attempt that never finished (listed, not counted: it has no reward).
 */
export function findAttempts(dirs: readonly string[]): { attempts: AttemptFolder[]; incomplete: string[] } {
  if (dirs.length === 0) throw new Error('no ATTEMPTS_DIR given');
  const attempts: AttemptFolder[] = [];
  const incomplete: string[] = [];
  for (const root of dirs) {
    if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`ATTEMPTS_DIR ${root} is not a folder`);
    const subdirs = readdirSync(root, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort(compare);
    if (subdirs.length === 0)
      throw new Error(`ATTEMPTS_DIR ${root} holds no attempt folders (a pilot's are in <runs>/attempts/)`);
    for (const id of subdirs) {
      const dir = path.join(root, id);
      const results = path.join(dir, RESULTS_FILE);
      if (!existsSync(results)) {
        incomplete.push(dir);
        continue;
      }
      attempts.push({ dir, id, results: readResults(results), trace: path.join(dir, TRACE_FILE) });
    }
  }
  return { attempts, incomplete };
}

/**
 * Joins each attempt of `editor` to its results.csv row, by attempt id, target, family and seed. An attempt whose
 * results name another editor is left out (counted in `otherEditors`); one with no row, or two, is an error.
 */
export function tokenEfficiency(
  editor: string,
  records: readonly ResultsCsvRecord[],
  attempts: readonly AttemptFolder[],
  csvName = 'RESULTS_CSV',
): { rows: EfficiencyRow[]; otherEditors: number; rowsWithoutAttempt: string[] } {
  const own = records.filter((r) => r.editor === editor);
  if (own.length === 0)
    throw new Error(
      `${csvName} has no row of editor "${editor}" (it has: ${[...new Set(records.map((r) => r.editor))].join(', ')})`,
    );
  const used = new Set<ResultsCsvRecord>();
  const perAttempt: EfficiencyRow[] = [];
  let otherEditors = 0;
  for (const a of attempts) {
    const label = a.results.editor?.label;
    if (label !== undefined && label !== editor) {
      otherEditors++;
      continue;
    }
    const { model_id, revision } = a.results.versions;
    const { family, seed } = a.results.episode;
    const matches = own.filter(
      (r) =>
        r.attempt === a.id &&
        r.model_id === model_id &&
        r.revision === revision &&
        r.family === family &&
        Number(r.seed) === seed,
    );
    const what = `editor "${editor}", attempt "${a.id}", ${model_id} @ ${revision}, ${family} seed ${seed}`;
    if (matches.length === 0)
      throw new Error(`${a.dir}: ${csvName} has no row for ${what}; was it made from these runs?`);
    if (matches.length > 1) throw new Error(`${a.dir}: ${csvName} has ${matches.length} rows for ${what}`);
    const record = matches[0]!;
    used.add(record);
    if (a.usage === undefined && !existsSync(a.trace))
      throw new Error(`attempt ${a.dir} has ${RESULTS_FILE} but no ${TRACE_FILE}: its editor tokens are unknown`);
    const usage = a.usage ?? readTraceUsage(a.trace);
    if (usage instanceof Error) throw usage;
    perAttempt.push(
      row(
        'attempt',
        editor,
        [model_id, revision, family],
        [
          {
            usage,
            reward: number(record.reward, 'reward', csvName),
            forward: optionalNumber(record.forward_tokens, 'forward_tokens', csvName),
          },
        ],
        seed,
        a.id,
      ),
    );
  }
  if (perAttempt.length === 0)
    throw new Error(`no attempt of editor "${editor}" in the ATTEMPTS_DIR(s) (${otherEditors} of other editors)`);
  perAttempt.sort(
    (a, b) =>
      compare(a.model_id, b.model_id) ||
      compare(a.revision, b.revision) ||
      compare(a.family, b.family) ||
      a.seed! - b.seed! ||
      compare(a.attempt!, b.attempt!),
  );
  return {
    rows: [...perAttempt, ...aggregate(perAttempt, editor)],
    otherEditors,
    rowsWithoutAttempt: own
      .filter((r) => !used.has(r))
      .map((r) => r.attempt)
      .sort(compare),
  };
}

type Part = { usage: EditorUsage; reward: number; forward: number | null };

/** Per (target, family), then per target over every family. */
function aggregate(attempts: readonly EfficiencyRow[], editor: string): EfficiencyRow[] {
  const part = (r: EfficiencyRow): Part => ({
    usage: {
      requests: r.editor_requests,
      failed_requests: r.editor_failed_requests,
      input_tokens: r.input_tokens,
      cached_input_tokens: r.cached_input_tokens,
      output_tokens: r.output_tokens,
      reasoning_tokens: r.reasoning_tokens,
    },
    reward: r.mean_reward,
    forward: r.target_forward_tokens,
  });
  const groups = (key: (r: EfficiencyRow) => string[]) => {
    const map = new Map<string, EfficiencyRow[]>();
    for (const r of attempts) {
      const id = JSON.stringify(key(r));
      map.set(id, [...(map.get(id) ?? []), r]);
    }
    return [...map.entries()]
      .sort(([a], [b]) => compare(a, b))
      .map(([id, rows]) => [JSON.parse(id) as string[], rows] as const);
  };
  const families = groups((r) => [r.model_id, r.revision, r.family]).map(([[m, v, f], rows]) =>
    row('family', editor, [m!, v!, f!], rows.map(part)),
  );
  const all = groups((r) => [r.model_id, r.revision]).map(([[m, v], rows]) =>
    row('all', editor, [m!, v!, 'all'], rows.map(part)),
  );
  return [...families, ...all];
}

function row(
  scope: EfficiencyRow['scope'],
  editor: string,
  [model_id, revision, family]: [string, string, string],
  parts: Part[],
  seed: number | null = null,
  attempt: string | null = null,
): EfficiencyRow {
  const sum = (f: (p: Part) => number) => parts.reduce((s, p) => s + f(p), 0);
  const input = sum((p) => p.usage.input_tokens);
  const output = sum((p) => p.usage.output_tokens);
  const editorTokens = input + output;
  const rewards = parts.map((p) => p.reward);
  return {
    scope,
    editor,
    model_id,
    revision,
    family,
    seed,
    attempt,
    n: parts.length,
    editor_requests: sum((p) => p.usage.requests),
    editor_failed_requests: sum((p) => p.usage.failed_requests),
    input_tokens: input,
    cached_input_tokens: sum((p) => p.usage.cached_input_tokens),
    output_tokens: output,
    reasoning_tokens: sum((p) => p.usage.reasoning_tokens),
    editor_tokens: editorTokens,
    mean_reward: mean(rewards),
    reward_per_1k_editor_tokens: editorTokens > 0 ? (1000 * sum((p) => p.reward)) / editorTokens : null,
    target_forward_tokens: parts.some((p) => p.forward === null) ? null : sum((p) => p.forward!),
  };
}

function number(text: string, column: string, csvName: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value))
    throw new Error(`${csvName}: column ${column} holds "${text}", expected a number`);
  return value;
}

const optionalNumber = (text: string, column: string, csvName: string): number | null =>
  text === '' ? null : number(text, column, csvName);
