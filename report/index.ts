// Reports over finished runs: `report` (results by target and editor: CSV, a self-contained scoreboard page and
// one page per attempt) and `report-token-efficiency` (editor tokens per attempt, reward per 1,000 editor tokens).
// Each output set has a JSON sidecar with the package version, the command, its arguments and the generation
// time; the CSVs themselves stay plain RFC 4180 (no comment rows), and every results row carries its own model
// revision and versions.
import path from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { readAttemptFolder, readReplay, type Replay } from './attempt-folder.ts';
import { renderAttemptPage } from './attempt-page.ts';
import { collectResults, compare, labelAttempts, type Collected, type LabelledAttempt } from './collect.ts';
import { csvField, readCsvRecords, recordsToCsv } from './csv.ts';
import { renderHtml, type ReplayRow, type ReportMeta, type ScoreboardExtras } from './html.ts';
import { ATTEMPT_COLUMNS, SUMMARY_COLUMNS, attemptRows, summaryRows, type AttemptRow } from './table.ts';
import {
  EFFICIENCY_COLUMNS,
  RESULTS_CSV_COLUMNS,
  attemptUsage,
  findAttempts,
  tokenEfficiency,
  type EfficiencyRow,
  type ResultsCsvRecord,
} from './token-efficiency.ts';
import { TRACE_FILE } from './trace-file.ts';
import type { EditorUsage } from '../taskset/index.ts';

export * from './attempt-folder.ts';
export * from './attempt-page.ts';
export * from './collect.ts';
export * from './csv.ts';
export * from './html.ts';
export * from './html-kit.ts';
export * from './table.ts';
export * from './token-efficiency.ts';
export * from './trace-file.ts';

export const META_FORMAT = 'iwibench-report-meta/1';

export type Invocation = { command: string; args: Record<string, unknown> };

function meta(invocation: Invocation, inputs: string[], outputs: Record<string, string>) {
  return {
    format: META_FORMAT,
    command: invocation.command,
    package_version: PACKAGE_VERSION,
    args: invocation.args,
    generated_at: new Date().toISOString(),
    inputs,
    outputs,
  };
}

export type ReportOutputs = {
  results_csv: string;
  summary_csv: string;
  html: string;
  meta: string;
  /** The folder of the attempt pages. */
  pages: string;
  attempts: number;
  replays: number;
  skipped: string[];
};

/** The folder next to report.html that holds one page per attempt. */
export const PAGES_DIR = 'attempts';

/**
 * `report`: OUT/results.csv, OUT/summary.csv, OUT/report.html (the scoreboard), OUT/attempts/<attempt>.html (one
 * page per attempt) and OUT/report.json (the sidecar). A results.json with a replay.json next to it is a replay
 * (replay-patch): it is listed with the replays, not counted as an attempt.
 */
export function writeReport(options: {
  runs: string[];
  editors: string[];
  outputDir: string;
  invocation: Invocation;
}): ReportOutputs {
  const collected = collectResults(options.runs);
  const replayOf = new Map(collected.map((c) => [c, readReplay(c.file, c.results)] as const));
  const { kept, skipped } = labelAttempts(
    collected.filter((c) => !replayOf.get(c)),
    options.editors,
  );
  const rows = attemptRows(kept);
  const summary = summaryRows(rows);
  const out = (name: string) => path.join(options.outputDir, name);
  const outputs = {
    results_csv: out('results.csv'),
    summary_csv: out('summary.csv'),
    html: out('report.html'),
    meta: out('report.json'),
    pages: out(PAGES_DIR),
  };
  const sidecar = meta(options.invocation, options.runs, outputs);
  const pageMeta: ReportMeta = {
    command: sidecar.command,
    package_version: sidecar.package_version,
    args: sidecar.args,
    generated_at: sidecar.generated_at,
    inputs: sidecar.inputs,
  };

  const byFile = new Map(kept.map((a) => [a.file, a]));
  const names = new Set<string>();
  const pageFiles = new Map(rows.map((r) => [r.results_json, pageName(r.attempt, names)]));
  const pages = new Map([...pageFiles].map(([file, name]) => [file, `${PAGES_DIR}/${encodeURIComponent(name)}`]));
  const replays = replayRows(collected, replayOf, rows, pages);
  const editorTokens = new Map<string, number | null>();
  const traceUsages = new Map<string, EditorUsage | Error>();
  // One attempt at a time: a trace can be large, and only its page and its editor tokens are kept.
  for (const row of rows) {
    const attempt = byFile.get(row.results_json)!;
    const folder = readAttemptFolder(attempt.file, attempt.results);
    const usage = attemptUsage(folder.trace, attempt.results);
    editorTokens.set(
      row.results_json,
      usage && !(usage instanceof Error) ? usage.input_tokens + usage.output_tokens : null,
    );
    if (folder.trace) traceUsages.set(row.results_json, usage!);
    const own = replays.filter((r) => r.original_results_json === row.results_json);
    const html = renderAttemptPage({
      results: attempt.results,
      editor: row.editor,
      attempt: row.attempt,
      resultsFile: attempt.file,
      folder,
      replays: own,
      back: '../report.html',
    });
    writeFileAtomic(path.join(outputs.pages, pageFiles.get(row.results_json)!), html, false);
  }
  const efficiency = efficiencyByEditor(rows, kept, traceUsages);
  writeFileAtomic(outputs.results_csv, recordsToCsv(ATTEMPT_COLUMNS, rows), false);
  writeFileAtomic(outputs.summary_csv, recordsToCsv(SUMMARY_COLUMNS, summary), false);
  writeFileAtomic(
    outputs.html,
    renderHtml(rows, summary, pageMeta, { pages, editorTokens, replays, efficiency }),
    false,
  );
  writeJsonAtomic(
    outputs.meta,
    { ...sidecar, attempts: rows.length, replays: replays.length, skipped: skipped.map((s) => s.file) },
    false,
  );
  return { ...outputs, attempts: rows.length, replays: replays.length, skipped: skipped.map((s) => s.file) };
}

/** A file name for an attempt's page: its id with anything unusual replaced, made unique within the report. */
function pageName(attempt: string, taken: Set<string>): string {
  const base = attempt.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 120) || 'attempt';
  let name = `${base}.html`;
  for (let k = 2; taken.has(name); k++) name = `${base}-${k}.html`;
  taken.add(name);
  return name;
}

function replayRows(
  collected: readonly Collected[],
  replayOf: ReadonlyMap<Collected, Replay | null>,
  rows: readonly AttemptRow[],
  pages: ReadonlyMap<string, string>,
): ReplayRow[] {
  return collected.flatMap((c) => {
    const replay = replayOf.get(c);
    if (!replay) return [];
    // replay.json names the original results.json as it was given to replay-patch (maybe relative to another
    // folder): matched as a path, else by its attempt folder's name and the episode.
    const { family, seed } = c.results.episode;
    const original =
      rows.find((r) => path.resolve(r.results_json) === path.resolve(replay.original)) ??
      rows.find(
        (r) => r.attempt === path.basename(path.dirname(replay.original)) && r.family === family && r.seed === seed,
      );
    return [
      {
        editor: c.results.editor?.label ?? original?.editor ?? '(unlabelled)',
        family,
        seed,
        original_control_seed: replay.original_control_seed,
        control_seed: replay.control_seed,
        original_reward: replay.original_reward,
        reward: replay.reward,
        new_controls: replay.new_controls,
        repeated_controls: replay.repeated_controls,
        original_page: original ? (pages.get(original.results_json) ?? null) : null,
        original_results_json: original?.results_json ?? null,
        original: replay.original,
        results_json: c.file,
      },
    ];
  });
}

/** report-token-efficiency's join per editor over this report's attempts; none for an editor with a traceless attempt. */
function efficiencyByEditor(
  rows: readonly AttemptRow[],
  kept: readonly LabelledAttempt[],
  traceUsages: ReadonlyMap<string, EditorUsage | Error>,
): ScoreboardExtras['efficiency'] {
  const editors = [...new Set(rows.map((r) => r.editor))].sort(compare);
  return editors.map((editor) => {
    const own = rows.filter((r) => r.editor === editor);
    const missing = own.filter((r) => !traceUsages.has(r.results_json)).length;
    if (missing > 0)
      return {
        editor,
        rows: null,
        note: `${missing} of ${own.length} attempts have no trace.jsonl: editor tokens unknown`,
      };
    const records = own.map(
      (r) => Object.fromEntries(RESULTS_CSV_COLUMNS.map((c) => [c, csvField(r[c])])) as ResultsCsvRecord,
    );
    const folders = kept
      .filter((a) => own.some((r) => r.results_json === a.file))
      .map((a) => ({
        dir: path.dirname(a.file),
        id: a.attempt,
        results: { ...a.results, editor: { label: editor } },
        trace: path.join(path.dirname(a.file), TRACE_FILE),
        usage: traceUsages.get(a.file), // read with the page: not read again
      }));
    let efficiency: EfficiencyRow[];
    try {
      ({ rows: efficiency } = tokenEfficiency(editor, records, folders));
    } catch (error) {
      // e.g. two RUNS holding the same attempt id: the join is ambiguous, the rest of the report is not.
      return { editor, rows: null, note: (error as Error).message };
    }
    const aggregates = efficiency.filter((r) => r.scope !== 'attempt');
    if (aggregates.every((r) => r.editor_tokens === 0))
      return { editor, rows: aggregates, note: 'no editor tokens (a built-in or scripted editor calls no model)' };
    return { editor, rows: aggregates };
  });
}

export type TokenEfficiencyOutputs = {
  output: string;
  meta: string;
  editor: string;
  attempts: number;
  incomplete: string[];
  other_editors: number;
  rows_without_attempt: string[];
  families: EfficiencyRow[];
  overall: EfficiencyRow[];
};

/** `report-token-efficiency`: the CSV at `output` and its sidecar `<output without .csv>.json`. */
export function writeTokenEfficiency(options: {
  editor: string;
  resultsCsv: string;
  attemptsDirs: string[];
  output: string;
  invocation: Invocation;
}): TokenEfficiencyOutputs {
  const { rows, summary } = editorEfficiency(options);
  const sidecarFile = options.output.replace(/\.csv$/i, '') + '.json';
  const result: TokenEfficiencyOutputs = { output: options.output, meta: sidecarFile, ...summary };
  writeFileAtomic(options.output, recordsToCsv(EFFICIENCY_COLUMNS, rows), false);
  writeJsonAtomic(
    sidecarFile,
    { ...meta(options.invocation, [options.resultsCsv, ...options.attemptsDirs], { csv: options.output }), ...result },
    false,
  );
  return result;
}

export type EditorRuns = { editor: string; resultsCsv: string; attemptsDirs: string[] };

/** One editor's efficiency rows and the summary its sidecar carries. */
function editorEfficiency({ editor, resultsCsv, attemptsDirs }: EditorRuns): {
  rows: EfficiencyRow[];
  summary: Omit<TokenEfficiencyOutputs, 'output' | 'meta'>;
} {
  const records = readCsvRecords(resultsCsv, RESULTS_CSV_COLUMNS) as ResultsCsvRecord[];
  const { attempts, incomplete } = findAttempts(attemptsDirs);
  const { rows, otherEditors, rowsWithoutAttempt } = tokenEfficiency(editor, records, attempts, resultsCsv);
  const summary = {
    editor,
    attempts: rows.filter((r) => r.scope === 'attempt').length,
    incomplete,
    other_editors: otherEditors,
    rows_without_attempt: rowsWithoutAttempt,
    families: rows.filter((r) => r.scope === 'family'),
    overall: rows.filter((r) => r.scope === 'all'),
  };
  return { rows, summary };
}

/**
 * `report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR` repeated: one CSV with every editor's rows (the
 * `editor` column tells them apart) and one sidecar holding each editor's summary.
 */
export function writeTokenEfficiencies(options: { editors: EditorRuns[]; output: string; invocation: Invocation }): {
  output: string;
  meta: string;
  editors: Omit<TokenEfficiencyOutputs, 'output' | 'meta'>[];
} {
  const sidecarFile = options.output.replace(/\.csv$/i, '') + '.json';
  const allRows: EfficiencyRow[] = [];
  const editors = options.editors.map((runs) => {
    const { rows, summary } = editorEfficiency(runs);
    allRows.push(...rows);
    return summary;
  });
  const inputs = options.editors.flatMap((e) => [e.resultsCsv, ...e.attemptsDirs]);
  writeFileAtomic(options.output, recordsToCsv(EFFICIENCY_COLUMNS, allRows), false);
  const result = { output: options.output, meta: sidecarFile, editors };
  writeJsonAtomic(sidecarFile, { ...meta(options.invocation, inputs, { csv: options.output }), ...result }, false);
  return result;
}
