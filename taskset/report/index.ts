// Reports over finished runs: `report` (results by target and editor: CSV and one self-contained HTML page) and
// `report-token-efficiency` (editor tokens per attempt, reward per 1,000 editor tokens). Each output set has a
// JSON sidecar with the package version, the command, its arguments and the generation time; the CSVs themselves
// stay plain RFC 4180 (no comment rows), and every results row carries its own model revision and versions.
import path from 'node:path';
import { writeFileAtomic, writeJsonAtomic } from '../../service/files.ts';
import { PACKAGE_VERSION } from '../../service/weights/patch.ts';
import { collectResults, labelAttempts } from './collect.ts';
import { readCsvRecords, recordsToCsv } from './csv.ts';
import { renderHtml, type ReportMeta } from './html.ts';
import { ATTEMPT_COLUMNS, SUMMARY_COLUMNS, attemptRows, summaryRows } from './table.ts';
import { EFFICIENCY_COLUMNS, RESULTS_CSV_COLUMNS, findAttempts, tokenEfficiency, type EfficiencyRow, type ResultsCsvRecord } from './token-efficiency.ts';

export * from './collect.ts';
export * from './csv.ts';
export * from './html.ts';
export * from './table.ts';
export * from './token-efficiency.ts';

export const META_FORMAT = 'iwibench-report-meta/1';

export type Invocation = { command: string; args: Record<string, unknown> };

function meta(invocation: Invocation, inputs: string[], outputs: Record<string, string>) {
  return { format: META_FORMAT, command: invocation.command, package_version: PACKAGE_VERSION, args: invocation.args, generated_at: new Date().toISOString(), inputs, outputs };
}

export type ReportOutputs = { results_csv: string; summary_csv: string; html: string; meta: string; attempts: number; skipped: string[] };

/** `report`: OUT/results.csv, OUT/summary.csv, OUT/report.html and OUT/report.json (the sidecar). */
export function writeReport(options: { runs: string[]; editors: string[]; outputDir: string; invocation: Invocation }): ReportOutputs {
  const { kept, skipped } = labelAttempts(collectResults(options.runs), options.editors);
  const rows = attemptRows(kept);
  const summary = summaryRows(rows);
  const out = (name: string) => path.join(options.outputDir, name);
  const outputs = { results_csv: out('results.csv'), summary_csv: out('summary.csv'), html: out('report.html'), meta: out('report.json') };
  const sidecar = meta(options.invocation, options.runs, outputs);
  const pageMeta: ReportMeta = { command: sidecar.command, package_version: sidecar.package_version, args: sidecar.args, generated_at: sidecar.generated_at, inputs: sidecar.inputs };
  writeFileAtomic(outputs.results_csv, recordsToCsv(ATTEMPT_COLUMNS, rows), false);
  writeFileAtomic(outputs.summary_csv, recordsToCsv(SUMMARY_COLUMNS, summary), false);
  writeFileAtomic(outputs.html, renderHtml(rows, summary, pageMeta), false);
  writeJsonAtomic(outputs.meta, { ...sidecar, attempts: rows.length, skipped: skipped.map((s) => s.file) }, false);
  return { ...outputs, attempts: rows.length, skipped: skipped.map((s) => s.file) };
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
export function writeTokenEfficiency(options: { editor: string; resultsCsv: string; attemptsDirs: string[]; output: string; invocation: Invocation }): TokenEfficiencyOutputs {
  const records = readCsvRecords(options.resultsCsv, RESULTS_CSV_COLUMNS) as ResultsCsvRecord[];
  const { attempts, incomplete } = findAttempts(options.attemptsDirs);
  const { rows, otherEditors, rowsWithoutAttempt } = tokenEfficiency(options.editor, records, attempts, options.resultsCsv);
  const sidecarFile = options.output.replace(/\.csv$/i, '') + '.json';
  const result: TokenEfficiencyOutputs = {
    output: options.output,
    meta: sidecarFile,
    editor: options.editor,
    attempts: rows.filter((r) => r.scope === 'attempt').length,
    incomplete,
    other_editors: otherEditors,
    rows_without_attempt: rowsWithoutAttempt,
    families: rows.filter((r) => r.scope === 'family'),
    overall: rows.filter((r) => r.scope === 'all'),
  };
  writeFileAtomic(options.output, recordsToCsv(EFFICIENCY_COLUMNS, rows), false);
  writeJsonAtomic(sidecarFile, { ...meta(options.invocation, [options.resultsCsv, ...options.attemptsDirs], { csv: options.output }), ...result }, false);
  return result;
}
