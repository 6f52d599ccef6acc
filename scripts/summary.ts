// What a command that writes results prints when it ends. By default a short summary for a person: what it wrote
// where, then the headline figures, worded here once so that every command says them the same way. With --json, the
// full document instead (one JSON value on stdout), for scripts.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { EpisodeScore, ResultsFile } from '../taskset/index.ts';

/** The flag, spread into a command's defaults, and its help line. */
export const JSON_FLAG_DEFAULTS = { json: false };
export const JSON_FLAG_HELP = {
  json: 'print the full result as one JSON document instead of the summary (for scripts)',
};

export type Summary = {
  /** What the command wrote, each [path, what it holds]. */
  wrote: readonly (readonly [string, string])[];
  /** Headline figures, one line each (scoreLine, controlsLine, …). */
  figures?: readonly string[];
};

/** `command:`, a `wrote PATH (what)` line per output, then the figures. */
export function summaryText(command: string, { wrote, figures = [] }: Summary): string {
  return [`${command}:`, ...wrote.map(([file, what]) => `  wrote ${file} (${what})`), ...figures.map((f) => `  ${f}`)]
    .map((line) => `${line}\n`)
    .join('');
}

/** The summary, or with --json the whole document, on stdout. */
export function printResult(json: boolean, command: string, document: unknown, summary: Summary): void {
  process.stdout.write(json ? `${JSON.stringify(document)}\n` : summaryText(command, summary));
}

export const figure = (value: number | null | undefined) => (value == null ? 'n/a' : value.toFixed(3));

/** `1 attempt`, `2 attempts`. */
export const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** An evaluated attempt's headline: `reward 0.632, gain 0.700, retention 0.903 (56 of 62 base-correct items kept)`. */
export function scoreLine(score: Pick<EpisodeScore, 'reward' | 'gain' | 'retention'>): string {
  const { retained, baseCorrect } = score.retention.counts.all;
  return `reward ${figure(score.reward)}, gain ${figure(score.gain)}, retention ${figure(score.retention.overall)} (${retained} of ${baseCorrect} base-correct items kept)`;
}

/** A set of controls: `new controls: retention 0.909 (40 of 44 base-correct kept)`. */
export function controlsLine(
  label: string,
  counts: { base_correct: number; retained: number; retention: number | null },
): string {
  return `${label}: retention ${figure(counts.retention)} (${counts.retained} of ${counts.base_correct} base-correct kept)`;
}

type PilotAttempt =
  { status: 'complete'; id: string; reward: number } | { status: 'failed'; id: string; error: string };

/** A pilot's attempts in one line: `10 attempts, 0 failed, mean reward 0.067`. */
export function attemptsLine(attempts: readonly PilotAttempt[]): string {
  const rewards = attempts.flatMap((a) => (a.status === 'complete' ? [a.reward] : []));
  const mean = rewards.length > 0 ? rewards.reduce((sum, r) => sum + r, 0) / rewards.length : null;
  const failed = attempts.length - rewards.length;
  return `${count(attempts.length, 'attempt')}, ${failed} failed, mean reward ${figure(mean)}`;
}

/** One attempt of a pilot: `<id>: ` and its scoreLine (from its results.json), or why it failed. */
export function attemptLine(outputDir: string, attempt: PilotAttempt): string {
  if (attempt.status === 'failed') return `${attempt.id}: failed (${attempt.error})`;
  const results = path.join(outputDir, 'attempts', attempt.id, 'results.json');
  return `${attempt.id}: ${scoreLine((JSON.parse(readFileSync(results, 'utf8')) as ResultsFile).score)}`;
}
