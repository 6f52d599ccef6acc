// The numbers a run reports, and the reference's report.txt lines and markdown table (run_openai.py print_score,
// save_summary, final_report, token_report). Raw counts everywhere; percentages are rounded only when printed.
import type { RequestFailure, Usage } from './client.ts';
import { addTallies, rates, type Rates, type Tally } from './score.ts';

export type FailedQuestion = { question_id: number; category: string } & RequestFailure;

export type CategoryScore = { category: string } & Tally & Rates;

export type TokenStat = { min: number; mean: number; max: number; total: number; per_second: number };
export type TokenStats = { requests: number; seconds: number; prompt: TokenStat; completion: TokenStat };

export function categoryScore(category: string, t: Tally): CategoryScore {
  return { category, ...t, ...rates(t) };
}

export function overallScore(categories: CategoryScore[]): Tally & Rates {
  const t = addTallies(categories);
  return { ...t, ...rates(t) };
}

/** Token usage of this run's requests that reported usage; null when the server reported none. */
export function tokenStats(usages: Usage[], seconds: number): TokenStats | null {
  if (usages.length === 0) return null;
  const stat = (values: number[]): TokenStat => {
    let [min, max, total] = [Infinity, -Infinity, 0];
    for (const v of values) [min, max, total] = [Math.min(min, v), Math.max(max, v), total + v];
    return { min, mean: total / values.length, max, total, per_second: seconds > 0 ? total / seconds : 0 };
  };
  return {
    requests: usages.length,
    seconds,
    prompt: stat(usages.map((u) => u.prompt_tokens)),
    completion: stat(usages.map((u) => u.completion_tokens)),
  };
}

/**
 * Python's `f"{x:.{digits}f}"`: the exact binary value rounded half to even. JavaScript's toFixed rounds an exact tie
 * up (97 / 800 * 100 is exactly 12.125: Python "12.12", toFixed "12.13"); toFixed(100) is exact for these numbers.
 */
export function pythonFixed(x: number, digits: number): string {
  if (!Number.isFinite(x) || Math.abs(x) >= 1e21) return x.toFixed(digits);
  const exact = Math.abs(x).toFixed(100);
  const [whole, fraction] = exact.split('.') as [string, string];
  const rest = fraction.slice(digits);
  let kept = BigInt(whole + fraction.slice(0, digits));
  const half = `5${'0'.repeat(rest.length - 1)}`;
  if (rest > half || (rest === half && kept % 2n === 1n)) kept += 1n;
  const text = kept.toString().padStart(digits + 1, '0');
  const rounded = digits === 0 ? text : `${text.slice(0, -digits)}.${text.slice(-digits)}`;
  return x < 0 || Object.is(x, -0) ? `-${rounded}` : rounded; // Python keeps the sign: f"{-0.004:.2f}" is "-0.00"
}

/** The original's print_score: `label, corr/total, acc%`, acc 0 when nothing is right (so 0/0 prints 0.00%). */
function scoreLine(label: string, corr: number, wrong: number): string {
  const total = corr + wrong;
  return `${label}, ${corr}/${total}, ${pythonFixed(corr > 0 ? (corr / total) * 100 : 0, 2)}%`;
}

/** The original's four summary lines; `always` false: the random-guess lines only when both counts are non-zero. */
function summaryLines(t: Tally, always: boolean): string[] {
  const wrong = t.total - t.correct;
  const randomWrong = t.random_guesses - t.random_correct;
  const lines = [scoreLine('Total', t.correct, wrong)];
  if (always || (t.random_correct > 0 && randomWrong > 0)) {
    lines.push(
      scoreLine('Random Guess Attempts', t.random_guesses, t.total - t.random_guesses),
      scoreLine('Correct Random Guesses', t.random_correct, randomWrong),
      scoreLine('Adjusted Score Without Random Guesses', t.correct - t.random_correct, wrong - randomWrong),
    );
  }
  return lines;
}

/** `| overall | biology | … |`, dashes as long as each name, then the percentages (final_report). */
export function markdownTable(categories: CategoryScore[]): string {
  const overall = overallScore(categories);
  const names = ['overall', ...categories.map((c) => c.category)];
  const values = [overall.accuracy, ...categories.map((c) => c.accuracy)].map((ratio) =>
    ratio === null ? 'n/a' : pythonFixed(ratio * 100, 2),
  );
  return [
    `| ${names.join(' | ')} |`,
    `| ${names.map((n) => '-'.repeat(n.length)).join(' | ')} |`,
    `| ${values.join(' | ')} |`,
  ].join('\n');
}

/**
 * report.txt: our heading, then the original's lines (per category as save_summary(report=True) prints them, then
 * final_report's), then failed requests, token usage as token_report, and the markdown table.
 */
export function reportText(input: {
  heading: string[];
  categories: CategoryScore[];
  failed: FailedQuestion[];
  tokens: TokenStats | null;
}): string {
  const { categories, failed, tokens } = input;
  const lines = [...input.heading, ''];
  for (const c of categories)
    lines.push(
      `Finished testing ${c.category}.`,
      ...(c.total > 0 ? summaryLines(c, true) : [scoreLine('Total', 0, 0)]),
    );
  lines.push('Finished the benchmark.', ...summaryLines(overallScore(categories), false));
  lines.push(`Failed requests (not scored; a rerun asks them again): ${failed.length}`);
  for (const f of failed.slice(0, 20))
    lines.push(`  ${f.category} ${f.question_id}: ${f.kind}${f.status ? ` ${f.status}` : ''}: ${f.message}`);
  if (failed.length > 20) lines.push(`  … and ${failed.length - 20} more (see summary.json)`);
  if (tokens) {
    const tokenLine = (label: string, s: TokenStat) =>
      `${label} tokens: min ${s.min}, average ${pythonFixed(s.mean, 0)}, max ${s.max}, total ${s.total}, tk/s ${pythonFixed(s.per_second, 2)}`;
    lines.push('Token Usage:', tokenLine('Prompt', tokens.prompt), tokenLine('Completion', tokens.completion));
  }
  lines.push('Markdown Table:', markdownTable(categories));
  return `${lines.join('\n')}\n`;
}
