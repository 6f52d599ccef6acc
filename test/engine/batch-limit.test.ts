// The batch limit of continuous batching, from a given memory and a given speed curve (engine/batch-limit.ts), and
// the memory each row takes (engine/memory.ts).
import { describe, expect, it } from 'vitest';
import { chooseBatchLimit, probeSpeedCurve, type SpeedPoint } from '../../engine/batch-limit.ts';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { callMemoryBytes, continuousMemoryBytes } from '../../engine/memory.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

const MiB = 2 ** 20;
const curve = (points: [number, number][]): SpeedPoint[] =>
  points.map(([rows, tokensPerSecond]) => ({ rows, tokensPerSecond }));

describe('chooseBatchLimit', () => {
  it('takes the fastest row count measured, when memory allows it', () => {
    // 8 → 16 → 32 → 64 rise, the last by 3 % only: 64.
    const speed = curve([
      [8, 40],
      [16, 70],
      [32, 100],
      [64, 103],
    ]);
    expect(chooseBatchLimit({ memoryBytes: 1000 * MiB, bytesPerRow: 10 * MiB, speedCurve: speed })).toEqual({
      limit: 64,
      byMemory: 100,
      bySpeed: 64,
    });
    // The same curve, given in any order.
    expect(
      chooseBatchLimit({ memoryBytes: 1000 * MiB, bytesPerRow: 10 * MiB, speedCurve: speed.reverse() }).limit,
    ).toBe(64);
    // Of two equally fast row counts, the fewer.
    const even = curve([
      [16, 80],
      [32, 80],
    ]);
    expect(chooseBatchLimit({ memoryBytes: 1000 * MiB, bytesPerRow: MiB, speedCurve: even }).bySpeed).toBe(16);
    // One slow point (a neighbour's burst) does not stop it short of a faster row count measured after it.
    const noisy = curve([
      [8, 36],
      [16, 48],
      [32, 43],
      [64, 60],
      [128, 58],
    ]);
    expect(chooseBatchLimit({ memoryBytes: 1000 * MiB, bytesPerRow: MiB, speedCurve: noisy }).bySpeed).toBe(64);
    // A fall after the fastest point: the fastest.
    expect(
      chooseBatchLimit({
        memoryBytes: 1000 * MiB,
        bytesPerRow: MiB,
        speedCurve: curve([
          [8, 40],
          [16, 90],
          [32, 60],
        ]),
      }).bySpeed,
    ).toBe(16);
  });

  it('is bounded by memory (at least one row), and by the largest row count measured when speed never stops', () => {
    const rising = curve([
      [8, 10],
      [16, 20],
      [32, 40],
    ]);
    expect(chooseBatchLimit({ memoryBytes: 250 * MiB, bytesPerRow: 10 * MiB, speedCurve: rising })).toEqual({
      limit: 25,
      byMemory: 25,
      bySpeed: 32,
    });
    expect(chooseBatchLimit({ memoryBytes: 2000 * MiB, bytesPerRow: 10 * MiB, speedCurve: rising }).limit).toBe(32);
    expect(chooseBatchLimit({ memoryBytes: MiB, bytesPerRow: 10 * MiB, speedCurve: rising }).limit).toBe(1);
    // No curve: memory alone.
    expect(chooseBatchLimit({ memoryBytes: 95 * MiB, bytesPerRow: 10 * MiB, speedCurve: [] })).toEqual({
      limit: 9,
      byMemory: 9,
      bySpeed: Infinity,
    });
  });

  it('refuses bad input clearly', () => {
    const refused = expect.objectContaining({ code: 'ENGINE_INPUT_INVALID' });
    expect(() => chooseBatchLimit({ memoryBytes: -1, bytesPerRow: 1, speedCurve: [] })).toThrow(refused);
    expect(() => chooseBatchLimit({ memoryBytes: 1, bytesPerRow: 0, speedCurve: [] })).toThrow(/bytesPerRow/);
    expect(() => chooseBatchLimit({ memoryBytes: 1, bytesPerRow: 1, speedCurve: curve([[0, 5]]) })).toThrow(/rows ≥ 1/);
    expect(() => chooseBatchLimit({ memoryBytes: 1, bytesPerRow: 1, speedCurve: curve([[4, NaN]]) })).toThrow(refused);
  });
});

describe('probeSpeedCurve', () => {
  it('measures doubling row counts while memory allows, past a slow point, until the speed clearly falls', async () => {
    const asked: number[] = [];
    const measured = await probeSpeedCurve(async (rows) => {
      asked.push(rows);
      return { 8: 40, 16: 70, 32: 66, 64: 200, 128: 150 }[rows]!;
    }, 1000);
    // First the most rows memory allows, untimed; 32 fell under 10 % only: 64 is tried, and wins; then every point
    // once more, in reverse.
    expect(asked).toEqual([128, 8, 16, 32, 64, 128, 128, 64, 32, 16, 8]);
    expect(chooseBatchLimit({ memoryBytes: 1e9, bytesPerRow: 1, speedCurve: measured }).limit).toBe(64);
    const falling: number[] = [];
    await probeSpeedCurve(async (rows) => (falling.push(rows), { 8: 40, 16: 70, 32: 50 }[rows] ?? 500), 1000);
    expect(falling).toEqual([128, 8, 16, 32, 32, 16, 8]); // 32 ran below 90 % of 16: more rows are not tried
    const few: number[] = [];
    await probeSpeedCurve(async (rows) => (few.push(rows), rows), 20);
    expect(few).toEqual([16, 8, 16, 16, 8]);
  });

  it('keeps each point’s faster measurement, so a burst of other work over one pass does not choose for it', async () => {
    // The machine is busy during the 16 rows' first measurement only (after the untimed one and 8 rows'): they run at
    // half speed there, which stops the first pass; the second pass measures 16 again, quiet.
    const truth: Record<number, number> = { 8: 36, 16: 48, 32: 50, 64: 62, 128: 60 };
    let calls = 0;
    const measured = await probeSpeedCurve(async (rows) => (++calls === 3 ? truth[rows]! / 2 : truth[rows]!), 1000);
    expect(measured).toEqual([
      { rows: 8, tokensPerSecond: 36 },
      { rows: 16, tokensPerSecond: 48 },
    ]);
    expect(chooseBatchLimit({ memoryBytes: 1e9, bytesPerRow: 1, speedCurve: measured }).limit).toBe(16); // not 8
  });
});

describe('continuousMemoryBytes', () => {
  it('gives each row its own cache, decode activations and logits, and one prefill chunk', () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    const { config } = checkpoint;
    checkpoint.close();
    const { perRow, fixed } = continuousMemoryBytes(config, { tokens: 300 });
    const oneRow = callMemoryBytes(config, { batch: 1, tokens: 300, chunkRows: 1 });
    expect(perRow).toBeGreaterThan(oneRow.cache + 4 * config.vocab_size);
    expect(fixed).toBe(callMemoryBytes(config, { batch: 1, tokens: 300 }).chunk);
    expect(continuousMemoryBytes(config, { tokens: 600 }).perRow).toBeGreaterThan(perRow);
  });
});
