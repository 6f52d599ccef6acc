// A running try's phase, read from what it writes into its folder (the editor's trace, the evaluation processes'
// pid files), so that the attempt's code needs no hook: `pilot status` and the dashboard show it from the job's
// progress (job.updateProgress).
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';

/** A running try's job progress; where it runs and since when are the job's processedBy and processedOn. */
export type TryProgress = {
  /** "starting", "editing turn k of N", "evaluating pristine", "evaluating patched". */
  phase: string;
};

/** Follows a try folder: the latest editor turn in trace.jsonl, read incrementally, and the evaluation under way. */
export class PhaseReader {
  private offset = 0;
  private rest = '';
  private turn = 0;

  constructor(
    private readonly dir: string,
    private readonly maxTurns: number,
  ) {}

  phase(): string {
    const has = (name: string) => existsSync(path.join(this.dir, name));
    if (has('outputs-edited.json.pid')) return 'evaluating patched';
    if (has('outputs-pristine.json.pid') || has('outputs-pristine.json')) return 'evaluating pristine';
    this.readTrace();
    return this.turn > 0 ? `editing turn ${this.turn} of ${this.maxTurns}` : 'starting';
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
