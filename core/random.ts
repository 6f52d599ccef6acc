// The project's one seeded random generator (the taskset's episodes and controls, the report's bootstrap, the toy's
// training): sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, as in PractRand), seeded from SHA-256 of a
// string key such as "0.2.2/local_factual_update/seed=7".
// Never Math.random: an episode must be byte-identical for the same key.
import { createHash } from 'node:crypto';

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(readonly key: string) {
    const digest = createHash('sha256').update(key).digest();
    this.a = digest.readUInt32LE(0);
    this.b = digest.readUInt32LE(4);
    this.c = digest.readUInt32LE(8);
    this.d = digest.readUInt32LE(12);
    for (let i = 0; i < 12; i++) this.nextUint32(); // warm-up, as recommended for sfc32
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0) throw new Error(`Rng.int: n must be a positive integer, got ${n}`);
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [min, max], both included. */
  range(min: number, max: number): number {
    return min + this.int(max - min + 1);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick: empty list');
    return items[this.int(items.length)]!;
  }

  /** A shuffled copy (Fisher–Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** k distinct elements in random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    if (k > items.length) throw new Error(`Rng.sample: asked for ${k} of ${items.length}`);
    return this.shuffle(items).slice(0, k);
  }

  /** An independent generator for a named sub-stream (so adding draws in one part never shifts another). */
  fork(name: string): Rng {
    return new Rng(`${this.key}/${name}`);
  }
}
