// npx iwibench report RUNS [RUNS …] [--editor LABEL …] --output-dir D
// Results by target and editor from every results.json under RUNS: D/results.csv (one row per attempt),
// D/summary.csv (means per target, editor and family, and over all families, with a 95 % bootstrap interval on the
// mean reward), D/report.html (the scoreboard), D/attempts/<attempt>.html (one page per attempt: episode,
// transcript, patch, graded items; all self-contained) and D/report.json (version, arguments, time). A results.json
// with a replay.json next to it (replay-patch's output folder) is shown as a replay, not counted as an attempt.
// --editor (repeatable) keeps only attempts whose results carry one of these editor labels; results with no label
// (a bare evaluate-patch) take the label when exactly one --editor is given. Prints a summary (--json: the output
// paths and counts as JSON).
import { writeReport } from '../report/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { count, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';

const defaults = {
  editor: [] as string[],
  'output-dir': 'runs/report',
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'report RUNS [RUNS …]',
  description:
    'results.csv, summary.csv (means with 95 % bootstrap intervals) and a self-contained report.html from every results.json under RUNS.',
  examples: ['npx iwibench report runs/pilot --editor gpt-6.1-terra --output-dir runs/report'],
  defaults,
  help: {
    editor: 'keep only attempts with this editor label',
    'output-dir': 'results.csv, summary.csv, report.html, report.json',
    ...JSON_FLAG_HELP,
  },
  positionals: { names: 'RUNS', min: 1 },
});

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseCommand(argv, command);
  const outputs = writeReport({
    runs: positionals,
    editors: flags.editor,
    outputDir: flags['output-dir'],
    invocation: { command: 'report', args: { runs: positionals, ...flags } },
  });
  if (outputs.skipped.length > 0)
    process.stderr.write(
      `report: left out ${outputs.skipped.length} results of other editors (listed in ${outputs.meta})\n`,
    );
  printResult(flags.json, 'report', outputs, {
    wrote: [
      [outputs.html, 'the scoreboard, with one page per attempt'],
      [outputs.results_csv, 'one row per attempt'],
      [outputs.summary_csv, 'mean reward per target, editor and family, with 95 % intervals'],
    ],
    figures: [
      `${count(outputs.attempts, 'attempt')}, ${count(outputs.replays, 'replay')}` +
        (outputs.skipped.length > 0 ? `, ${count(outputs.skipped.length, 'result')} of other editors left out` : ''),
    ],
  });
}
