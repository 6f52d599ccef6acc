// A running try's phase, from what it writes into its folder (the editor's trace) and what its evaluations report on
// the evaluation progress bus (their out files are in its folder), so that the attempt's code needs no hook:
// `pilot status` and the dashboard show it from the job's progress (job.updateProgress).
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { evaluationProgress, type EvaluationProgress } from '../../service/evaluation-progress.ts';

/** A running try's job progress; where it runs and since when are the job's processedBy and processedOn. */
export type TryProgress = {
  /** "starting", "editing turn k of N", "evaluating: loading", "evaluating pristine i/N", "evaluating patched i/N". */
  phase: string;
};

/** Follows a try folder: the latest editor turn in trace.jsonl, read incrementally, and its evaluations' progress. */
export class PhaseReader {
  private offset = 0;
  private rest = '';
  private turn = 0;
  private evaluation: string | undefined;
  private readonly listener = (p: EvaluationProgress) => {
    if (p.out === undefined || path.dirname(path.resolve(p.out)) !== this.dir) return;
    this.evaluation = p.phase === 'loading' ? 'evaluating: loading' : `evaluating ${p.phase} ${p.done}/${p.total}`;
  };

  constructor(
    private readonly dir: string,
    private readonly maxTurns: number,
  ) {
    this.dir = path.resolve(dir);
    evaluationProgress.on('progress', this.listener);
  }

  phase(): string {
    if (this.evaluation) return this.evaluation;
    this.readTrace();
    return this.turn > 0 ? `editing turn ${this.turn} of ${this.maxTurns}` : 'starting';
  }

  close(): void {
    evaluationProgress.off('progress', this.listener);
  }

  private readTrace(): void {
    const file = path.join(this.dir, 'trace.jsonl');
    if (!existsSync(file)) return;
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return;
      const buffer = Buffer.alloc(size - this.offset);
      readSync(fd, buffer, 0, buffer.length, this.offset);
      this.offset = size;
      const lines = (this.rest + buffer.toString('utf8')).split('\n');
      this.rest = lines.pop() ?? '';
      for (const line of lines) {
        const m = /"type":"request","turn":(\d+)/.exec(line);
        if (m) this.turn = Math.max(this.turn, Number(m[1]));
      }
    } finally {
      closeSync(fd);
    }
  }
}
