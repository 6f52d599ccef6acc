// How a command shows the progress of its evaluations (service/evaluation-progress.ts) on stderr: on a terminal a
// cli-progress bar per evaluation, otherwise a line per evaluation when a phase starts or ends and every few
// seconds between, so that a running evaluation is never silent for long.
import path from 'node:path';
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { evaluationProgress, type EvaluationProgress } from '../service/evaluation-progress.ts';

const LINE_EVERY_MS = 5000;

/** What one report says: the phase, items done of total, generated tokens per second, the phase's time. */
export function describeProgress(p: EvaluationProgress): string {
  if (p.phase === 'loading') return 'loading the checkpoint';
  const rate = p.seconds > 0 ? (p.generatedTokens / p.seconds).toFixed(1) : '0.0';
  return `${p.phase} ${p.done}/${p.total} items, ${rate} tokens/s (${p.seconds.toFixed(0)} s)`;
}

/**
 * Shows the progress of every evaluation under `label` until the returned function is called. `perAttempt` names
 * each by its attempt folder (run-pilot: one line per worker's attempt); otherwise they share one line.
 */
export function showEvaluationProgress(label: string, options: { perAttempt?: boolean } = {}): () => void {
  const name = (p: EvaluationProgress) =>
    options.perAttempt && p.out ? `${label} ${path.basename(path.dirname(p.out))}` : label;
  const display = process.stderr.isTTY ? bars(name, options.perAttempt ?? false) : lines(name);
  evaluationProgress.on('progress', display.show);
  return () => {
    evaluationProgress.off('progress', display.show);
    display.stop();
  };
}

type Display = { show: (p: EvaluationProgress) => void; stop: () => void };

function lines(name: (p: EvaluationProgress) => string): Display {
  const last = new Map<string, { phase: string; at: number }>();
  return {
    show(p) {
      const key = name(p);
      const previous = last.get(key);
      const now = Date.now();
      const due = !previous || previous.phase !== p.phase || p.done === p.total || now - previous.at >= LINE_EVERY_MS;
      if (!due) return;
      last.set(key, { phase: p.phase, at: now });
      process.stderr.write(`${key}: ${describeProgress(p)}\n`);
    },
    stop: () => {},
  };
}

function bars(name: (p: EvaluationProgress) => string, removeWhenDone: boolean): Display {
  const multi = new MultiBar(
    { format: '{name} |{bar}| {status}', hideCursor: true, clearOnComplete: false, stopOnComplete: false },
    Presets.shades_classic,
  );
  const open = new Map<string, SingleBar>();
  return {
    show(p) {
      const key = name(p);
      const payload = { name: key, status: describeProgress(p) };
      const total = Math.max(p.total, 1); // loading: an empty bar
      let bar = open.get(key);
      if (!bar) open.set(key, (bar = multi.create(total, p.done, payload)));
      bar.setTotal(total);
      bar.update(p.done, payload);
      // An attempt's evaluation ends with its patched phase: its worker's line goes to the next attempt.
      if (removeWhenDone && p.phase === 'patched' && p.done === p.total) {
        multi.remove(bar);
        open.delete(key);
      }
    },
    stop: () => multi.stop(),
  };
}
