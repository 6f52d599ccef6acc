// npx iwibench report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR [ATTEMPTS_DIR …] [--editor …] --output F
// Editor tokens per attempt of each LABEL, summed from each attempt's trace.jsonl and joined to its row of RESULTS_CSV
// (the `report` command's results.csv): requests, input (cached apart), output (reasoning apart), reward per 1,000
// editor tokens, and target forward tokens apart; then the same per family and over all families (column `scope`).
// `--editor` repeats, one per editor, as in the seed's commands; all editors' rows go to one F. Writes F and its
// sidecar F-without-.csv + .json (version, arguments, time); prints a summary (--json: the sidecar's summary).
import { writeTokenEfficiencies, writeTokenEfficiency, type EditorRuns, type EfficiencyRow } from '../report/index.ts';
import { UsageError, defineCommand, parseCommand } from './args.ts';
import { count, figure, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult, type Summary } from './summary.ts';

const defaults = {
  // Declared for the help; the groups are taken from argv before the flags are parsed (editorGroups).
  editor: [] as string[],
  output: 'runs/tokens.csv',
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR [--editor LABEL RESULTS_CSV ATTEMPTS_DIR …]',
  description:
    'Editor tokens per attempt from the traces, joined to results.csv; reward per 1,000 editor tokens; target forward tokens apart.',
  examples: [
    'npx iwibench report-token-efficiency --editor gpt-6.1-terra runs/report/results.csv runs/pilot/attempts --output runs/tokens.csv',
    'npx iwibench report-token-efficiency --editor A runs/a/report/results.csv runs/a/attempts --editor B runs/b/report/results.csv runs/b/attempts',
  ],
  defaults,
  help: {
    editor: 'LABEL RESULTS_CSV ATTEMPTS_DIR [ATTEMPTS_DIR …]: an editor label, its results.csv and attempts folders',
    output: 'the CSV (its sidecar: the same name with .json)',
    ...JSON_FLAG_HELP,
  },
});

/** Splits `--editor LABEL CSV DIR [DIR …]` groups from the rest of argv; a group ends at the next flag. */
export function editorGroups(argv: string[]): { groups: EditorRuns[]; rest: string[]; problems: string[] } {
  const groups: EditorRuns[] = [];
  const rest: string[] = [];
  const problems: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] !== '--editor') {
      rest.push(argv[i]!);
      continue;
    }
    const values: string[] = [];
    while (i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) values.push(argv[++i]!);
    const [editor, resultsCsv, ...attemptsDirs] = values;
    if (!editor || !resultsCsv || attemptsDirs.length === 0)
      problems.push(`--editor needs LABEL RESULTS_CSV ATTEMPTS_DIR, got "${values.join(' ')}"`);
    else groups.push({ editor, resultsCsv, attemptsDirs });
  }
  if (groups.length === 0 && problems.length === 0)
    problems.push('--editor LABEL RESULTS_CSV ATTEMPTS_DIR is required');
  return { groups, rest, problems };
}

export async function main(argv: string[]): Promise<void> {
  const { groups, rest, problems } = editorGroups(argv);
  let parsed;
  try {
    parsed = parseCommand(rest, command);
  } catch (error) {
    if (error instanceof UsageError)
      throw new UsageError([...problems, ...error.problems], `usage: npx iwibench ${command.usage}`);
    throw error;
  }
  if (problems.length > 0) throw new UsageError(problems, `usage: npx iwibench ${command.usage} [--output F]`);
  const { output } = parsed.flags;
  const args = {
    editors: groups.map((g) => ({ editor: g.editor, results_csv: g.resultsCsv, attempts_dirs: g.attemptsDirs })),
    output,
  };
  if (groups.length === 1) {
    const [{ editor, resultsCsv, attemptsDirs }] = groups as [EditorRuns];
    const invocation = {
      command: 'report-token-efficiency',
      args: { editor, results_csv: resultsCsv, attempts_dirs: attemptsDirs, output },
    };
    const summary = writeTokenEfficiency({ editor, resultsCsv, attemptsDirs, output, invocation });
    reportIncomplete(summary.incomplete.length, summary.meta);
    printResult(parsed.flags.json, 'report-token-efficiency', summary, tokenSummary(summary, [summary]));
    return;
  }
  const summary = writeTokenEfficiencies({
    editors: groups,
    output,
    invocation: { command: 'report-token-efficiency', args },
  });
  const incomplete = summary.editors.reduce((n, e) => n + e.incomplete.length, 0);
  reportIncomplete(incomplete, summary.meta);
  printResult(parsed.flags.json, 'report-token-efficiency', summary, tokenSummary(summary, summary.editors));
}

/** The CSV and sidecar written, and per editor its attempts and reward per 1,000 editor tokens over all families. */
function tokenSummary(
  files: { output: string; meta: string },
  editors: readonly { editor: string; attempts: number; overall: EfficiencyRow[] }[],
): Summary {
  return {
    wrote: [
      [files.output, 'editor tokens and reward per 1,000 editor tokens, per attempt, family and editor'],
      [files.meta, 'version, arguments and per-editor summary'],
    ],
    // One row per target the editor ran on (all families); none where its attempts had no results.
    figures: editors.map(({ editor, attempts, overall }) =>
      [
        `${editor}: ${count(attempts, 'attempt')}`,
        ...overall.map(
          (row) => `reward per 1,000 editor tokens ${figure(row.reward_per_1k_editor_tokens)} on ${row.model_id}`,
        ),
      ].join(', '),
    ),
  };
}

function reportIncomplete(count: number, meta: string): void {
  if (count > 0)
    process.stderr.write(
      `report-token-efficiency: ${count} attempt folder(s) without results.json left out (listed in ${meta})\n`,
    );
}
