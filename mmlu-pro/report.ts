// The numbers a run reports, and report.txt as the original writes it: run_openai.py 6c0efcf's log lines
// (print_score, save_summary, final_report, token_report), or run_no_random.py's under the no_random profile.
// Raw counts everywhere; percentages are rounded only when printed, as Python rounds (python.ts).
import type { RequestFailure, Usage } from './client.ts';
import { pythonFixed } from './python.ts';
import { addTallies, rates, type Rates, type ScoringProfile, type Tally } from './score.ts';

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

/** print_score: `label, count/total, pct%`, pct 0 when count is 0 (so 0/0 prints 0.00%). */
function scoreLine(label: string, count: number, total: number): string {
  return `${label}, ${count}/${total}, ${pythonFixed(count > 0 ? (count / total) * 100 : 0, 2)}%`;
}

/**
 * The score lines after a category (`perCategory`) or after the benchmark. The original: Total, then the three
 * random-guess lines: after a category when it has answers, after the benchmark only when both the right and the
 * wrong guesses are non-zero (`if random_corr and random_wrong`). no_random: Total and No Answer, always.
 */
function scoreLines(t: Tally, profile: ScoringProfile, perCategory: boolean): string[] {
  const lines = [scoreLine('Total', t.correct, t.total)];
  if (profile === 'no_random') return [...lines, scoreLine('No Answer', t.no_answer, t.total)];
  const randomWrong = t.random_guesses - t.random_correct;
  if (perCategory ? t.total > 0 : t.random_correct > 0 && randomWrong > 0) {
    lines.push(
      scoreLine('Random Guess Attempts', t.random_guesses, t.total),
      scoreLine('Correct Random Guesses', t.random_correct, t.random_guesses),
      scoreLine('Adjusted Score Without Random Guesses', t.correct - t.random_correct, t.total - t.random_guesses),
    );
  }
  return lines;
}

/**
 * `| overall | biology | … |`, dashes as long as each name, then the percentages (final_report). Where the original
 * divides by zero (a category without answers; overall, except under no_random) we write "n/a".
 */
export function markdownTable(categories: CategoryScore[], profile: ScoringProfile = 'original'): string {
  const overall = overallScore(categories);
  const overallRatio = overall.accuracy ?? (profile === 'no_random' ? 0 : null);
  const names = ['overall', ...categories.map((c) => c.category)];
  const values = [overallRatio, ...categories.map((c) => c.accuracy)].map((ratio) =>
    ratio === null ? 'n/a' : pythonFixed(ratio * 100, 2),
  );
  return [
    `| ${names.join(' | ')} |`,
    `| ${names.map((n) => '-'.repeat([...n].length)).join(' | ')} |`,
    `| ${values.join(' | ')} |`,
  ].join('\n');
}

/** `timedelta(seconds=s).seconds` as hours, minutes, seconds (whole days dropped, as the original drops them). */
function elapsedText(seconds: number): string {
  const whole = Math.floor(Math.round(seconds * 1e6) / 1e6) % 86400;
  return `${Math.floor(whole / 3600)} hours, ${Math.floor((whole % 3600) / 60)} minutes, ${whole % 60} seconds`;
}

/**
 * report.txt, line for line as the original logs it: per category "Finished testing …" and its score lines, then
 * "Finished the benchmark …", the overall score lines, token usage (token_report) and the markdown table.
 * `seconds`: each category's wall time (categories run one after another, as in the original) and the whole run's.
 */
export function reportText(input: {
  categories: CategoryScore[];
  profile: ScoringProfile;
  seconds: { categories: number[]; total: number };
  tokens: TokenStats | null;
}): string {
  const { categories, profile, seconds, tokens } = input;
  const lines: string[] = [];
  categories.forEach((c, i) =>
    lines.push(
      `Finished testing ${c.category} in ${elapsedText(seconds.categories[i] ?? 0)}.`,
      ...scoreLines(c, profile, true),
    ),
  );
  lines.push(`Finished the benchmark in ${elapsedText(seconds.total)}.`);
  lines.push(...scoreLines(overallScore(categories), profile, false));
  if (tokens) {
    const tokenLine = (label: string, s: TokenStat) =>
      `${label} tokens: min ${s.min}, average ${pythonFixed(s.mean, 0)}, max ${s.max}, total ${s.total}, tk/s ${pythonFixed(s.per_second, 2)}`;
    lines.push('Token Usage:', tokenLine('Prompt', tokens.prompt), tokenLine('Completion', tokens.completion));
  }
  lines.push('Markdown Table:', markdownTable(categories, profile));
  return `${lines.join('\n')}\n`;
}
