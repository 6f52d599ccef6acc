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

const percent = (ratio: number | null) => (ratio === null ? 'n/a' : (ratio * 100).toFixed(2));

/** The reference's `label, corr/total, acc%` line. */
function scoreLine(label: string, part: number, whole: number): string {
  return `${label}, ${part}/${whole}, ${whole === 0 ? 'n/a' : `${percent(part / whole)}%`}`;
}

/** `| overall | biology | … |`, dashes as long as each name, then the percentages (final_report). */
export function markdownTable(categories: CategoryScore[]): string {
  const overall = overallScore(categories);
  const names = ['overall', ...categories.map((c) => c.category)];
  const values = [overall.accuracy, ...categories.map((c) => c.accuracy)].map(percent);
  return [`| ${names.join(' | ')} |`, `| ${names.map((n) => '-'.repeat(n.length)).join(' | ')} |`, `| ${values.join(' | ')} |`].join('\n');
}

export function reportText(input: {
  heading: string[];
  categories: CategoryScore[];
  failed: FailedQuestion[];
  tokens: TokenStats | null;
}): string {
  const { categories, failed, tokens } = input;
  const o = overallScore(categories);
  const lines = [...input.heading, ''];
  for (const c of categories) lines.push(scoreLine(c.category, c.correct, c.total));
  lines.push(
    scoreLine('Total', o.correct, o.total),
    scoreLine('Random Guess Attempts (unparsed)', o.random_guesses, o.total),
    scoreLine('Correct Random Guesses', o.random_correct, o.random_guesses),
    scoreLine('Adjusted Score Without Random Guesses', o.correct - o.random_correct, o.total - o.random_guesses),
  );
  lines.push(`Failed requests (not scored; a rerun asks them again): ${failed.length}`);
  for (const f of failed.slice(0, 20)) lines.push(`  ${f.category} ${f.question_id}: ${f.kind}${f.status ? ` ${f.status}` : ''}: ${f.message}`);
  if (failed.length > 20) lines.push(`  … and ${failed.length - 20} more (see the summaries)`);
  if (tokens) {
    const tokenLine = (label: string, s: TokenStat) =>
      `${label} tokens: min ${s.min}, average ${s.mean.toFixed(0)}, max ${s.max}, total ${s.total}, tk/s ${s.per_second.toFixed(2)}`;
    lines.push('Token Usage:', tokenLine('Prompt', tokens.prompt), tokenLine('Completion', tokens.completion));
  } else {
    lines.push('Token Usage: not reported by the server (or no requests in this run)');
  }
  lines.push('Markdown Table:', markdownTable(categories));
  return `${lines.join('\n')}\n`;
}
