// Shared by the weight tests: the run's tiny checkpoints (test/fixtures.ts, made once by the global setup; read
// only here), a plain BF16 rounding reference, and NumPy-style index lists.
import { isIwiError } from '../../../service/errors.ts';
import { Checkpoint } from '../../../engine/index.ts';
import { fixtureCheckpoint, type FixturePreset } from '../../fixtures.ts';

export type TinyFixture = { dir: string; checkpoint: Checkpoint; cleanup: () => void };

/** The shared tiny checkpoint of a preset, opened. Never write into `dir`. */
export function tinyFixture(preset: FixturePreset = 'tiny'): TinyFixture {
  const dir = fixtureCheckpoint(preset);
  const checkpoint = Checkpoint.open(dir);
  return { dir, checkpoint, cleanup: () => checkpoint.close() };
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function bf16Value(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0]!;
}

/**
 * Reference rounding of a float64 to BF16, by search: the nearest of the BF16 neighbours around x, ties to the
 * even bit pattern. Distances are exact (Sterbenz), so this needs no rounding arithmetic of its own.
 */
export function referenceBf16(x: number): number {
  if (Number.isNaN(x)) return NaN;
  if (Math.abs(x) >= 3.3961775292304787e38) return x > 0 ? Infinity : -Infinity; // midpoint between max BF16 and 2^128
  f32[0] = x;
  const near = u32[0]! >>> 16;
  let best = near,
    bestDistance = Infinity;
  for (const candidate of [near - 1, near, near + 1]) {
    const v = bf16Value(candidate);
    if (!Number.isFinite(v) || Math.sign(v) * Math.sign(x) < 0) continue;
    const d = Math.abs(x - v);
    if (d < bestDistance || (d === bestDistance && (candidate & 1) === 0)) {
      best = candidate;
      bestDistance = d;
    }
  }
  return bf16Value(best);
}

/** Python's `range(*slice(start, stop, step).indices(n))`, or [i] for an integer index. */
export function referenceIndices(entry: number | null | (number | null)[], n: number): number[] {
  if (entry === null) return Array.from({ length: n }, (_, i) => i);
  if (typeof entry === 'number') return [entry < 0 ? entry + n : entry];
  const step = entry[2] ?? 1;
  const clamp = (v: number | null, omitted: number) => {
    if (v === null) return omitted;
    if (v < 0) v += n;
    return step > 0 ? Math.min(Math.max(v, 0), n) : Math.min(Math.max(v, -1), n - 1);
  };
  const start = clamp(entry[0] ?? null, step > 0 ? 0 : n - 1);
  const stop = clamp(entry[1] ?? null, step > 0 ? n : -1);
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

/** Row-major flat offsets of the cartesian product of per-dimension index lists. */
export function referenceOffsets(indices: number[][], shape: number[]): number[] {
  let offsets = [0];
  indices.forEach((list, d) => {
    const stride = shape.slice(d + 1).reduce((a, b) => a * b, 1);
    offsets = offsets.flatMap((o) => list.map((i) => o + i * stride));
  });
  return offsets;
}

/** The IwiError code and message `run` throws; fails the test when it does not throw. */
export function errorOf(run: () => unknown): { code?: string; message: string } {
  try {
    run();
  } catch (error) {
    return { code: isIwiError(error) ? error.code : undefined, message: (error as Error).message };
  }
  throw new Error('expected an error');
}

/** Counts the event loop's turns from now until `stop()` (setImmediate callbacks run meanwhile). */
export function turnCounter(): { stop: () => number } {
  let turns = 0;
  let ticking = true;
  const tick = () => {
    if (ticking) (turns++, setImmediate(tick));
  };
  setImmediate(tick);
  return {
    stop: () => {
      ticking = false;
      return turns;
    },
  };
}
