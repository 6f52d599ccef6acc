// The batch limit of continuous batching: how many sequences are in flight at once. Two bounds, the smaller wins:
// memory (each row holds its own KV cache, activations and logits) and speed (past some row count a decode step's
// tokens per second stop rising: the kernel's arithmetic, not the weights' bandwidth, bounds it). Outputs never depend
// on it (every row is bitwise what its sequence gives alone): it only sets the time an evaluation takes.
import { IwiError } from '../core/errors.ts';

/** Decode speed measured at a row count: generated tokens per second. */
export type SpeedPoint = { rows: number; tokensPerSecond: number };

/** The probe stops once a row count runs below this fraction of the best so far (more rows only get slower). */
export const SPEED_FALL = 0.9;

/** Row counts the speed probe tries, in order, while memory allows and the speed has not clearly fallen. */
export const PROBE_ROWS = [8, 16, 32, 64, 128] as const;

/**
 * One measurement times decode steps (after one untimed) for at least this long, or PROBE_MAX_STEPS of them: with the
 * GC's pauses on the main thread (ENGINE_PROCESS_FLAGS), a window of two steps at 8 rows (~0.3 s at 1B) measured
 * 31–52 tokens/s from one fresh process to the next.
 */
export const PROBE_SECONDS = 2;
export const PROBE_MAX_STEPS = 16;

/**
 * The batch limit from memory (rows of `bytesPerRow` that fit in `memoryBytes`, at least 1) and from a measured speed
 * curve: the row count of the fastest point measured (of equal ones, the fewest rows). Judged over the whole curve,
 * not the next point alone, so that one slow measurement (the machine's neighbours move a point by 10 % and more)
 * does not stop it short; memory that the rows fit in costs an evaluation nothing, so no faster point is given up
 * for it. No bound from an empty curve.
 */
export function chooseBatchLimit(input: { memoryBytes: number; bytesPerRow: number; speedCurve: SpeedPoint[] }): {
  limit: number;
  byMemory: number;
  bySpeed: number;
} {
  const { memoryBytes, bytesPerRow, speedCurve } = input;
  if (!(Number.isFinite(memoryBytes) && memoryBytes >= 0))
    throw invalid(`memoryBytes must be a finite number ≥ 0, got ${memoryBytes}`);
  if (!(Number.isFinite(bytesPerRow) && bytesPerRow > 0))
    throw invalid(`bytesPerRow must be a finite number > 0, got ${bytesPerRow}`);
  for (const { rows, tokensPerSecond } of speedCurve) {
    if (!Number.isInteger(rows) || rows < 1 || !(tokensPerSecond >= 0))
      throw invalid(`a speed point needs rows ≥ 1 and tokens per second ≥ 0, got ${rows} rows at ${tokensPerSecond}`);
  }
  const byMemory = Math.max(1, Math.floor(memoryBytes / bytesPerRow));
  const fastest = Math.max(...speedCurve.map((point) => point.tokensPerSecond));
  const best = speedCurve.filter((point) => point.tokensPerSecond === fastest);
  const bySpeed = best.length > 0 ? Math.min(...best.map((point) => point.rows)) : Infinity;
  return { limit: Math.min(byMemory, bySpeed), byMemory, bySpeed };
}

/** Whether the speed probe should try `rows` after the points measured so far: memory allows it, speed has not fallen. */
export function probeNext(curve: SpeedPoint[], rows: number, byMemory: number): boolean {
  if (rows > byMemory) return false;
  if (curve.length === 0) return true;
  const best = Math.max(...curve.map((point) => point.tokensPerSecond));
  return curve.at(-1)!.tokensPerSecond >= best * SPEED_FALL;
}

/**
 * The speed curve as the probe measures it: after one untimed measurement at the most rows memory allows, PROBE_ROWS
 * in order while memory allows and the speed has not fallen, then the same points again in reverse order, each
 * keeping its faster measurement (a burst of the machine's other work that slows one pass's later points leaves the
 * other pass's earlier ones alone).
 */
export async function probeSpeedCurve(
  measure: (rows: number) => Promise<number>,
  byMemory: number,
): Promise<SpeedPoint[]> {
  const curve: SpeedPoint[] = [];
  // Untimed, at the most rows it may measure: a fresh process's first steps pay for what its loading left (page
  // faults, the collection of its garbage), which otherwise fell on the first points measured.
  const most = PROBE_ROWS.filter((rows) => rows <= byMemory).at(-1);
  if (most !== undefined) await measure(most);
  for (const rows of PROBE_ROWS) {
    if (!probeNext(curve, rows, byMemory)) break;
    curve.push({ rows, tokensPerSecond: await measure(rows) });
  }
  for (const point of [...curve].reverse())
    point.tokensPerSecond = Math.max(point.tokensPerSecond, await measure(point.rows));
  return curve;
}

function invalid(message: string): IwiError {
  return new IwiError('ENGINE_INPUT_INVALID', message);
}
