// npx iwibench report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR [ATTEMPTS_DIR …] --output F
// Editor tokens per attempt of LABEL, summed from each attempt's trace.jsonl and joined to its row of RESULTS_CSV
// (the `report` command's results.csv): requests, input (cached apart), output (reasoning apart), reward per 1,000
// editor tokens, and target forward tokens apart; then the same per family and over all families (column `scope`).
// Writes F and its sidecar F-without-.csv + .json (version, arguments, time); prints a JSON summary.
import { writeTokenEfficiency } from '../taskset/report/index.ts';
import { parseFlags } from './args.ts';

const defaults = {
  editor: undefined as string | undefined,
  output: undefined as string | undefined,
};

export async function main(argv: string[]): Promise<void> {
  const { flags, positionals } = parseFlags(argv, defaults, { positionals: true, required: ['editor', 'output'] });
  const [resultsCsv, ...attemptsDirs] = positionals;
  if (!resultsCsv || attemptsDirs.length === 0) throw new Error('usage: npx iwibench report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR [ATTEMPTS_DIR …] --output F');
  const summary = writeTokenEfficiency({
    editor: flags.editor!,
    resultsCsv,
    attemptsDirs,
    output: flags.output!,
    invocation: { command: 'report-token-efficiency', args: { results_csv: resultsCsv, attempts_dirs: attemptsDirs, ...flags } },
  });
  if (summary.incomplete.length > 0) process.stderr.write(`report-token-efficiency: ${summary.incomplete.length} attempt folder(s) without results.json left out (listed in ${summary.meta})\n`);
  process.stdout.write(JSON.stringify(summary) + '\n');
}
