// The memory one call adds is bounded by its KV cache and one chunk's activations (callMemoryBytes), measured as the
// growth of the process's peak resident memory (VmHWM, reset through /proc/self/clear_refs) over a call that the
// default budgets admit: 8 prompts of 4,095 tokens, and inspection of 4,095 positions at 4 layers. Without chunked
// prefill the first of these built two [8, 1, 4095, 4096] float32 masks and [8, 4, 4095, 4096] scores (≈ 3 GB).
import { readFileSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { callMemoryBytes } from '../../engine/memory.ts';
import { Gemma3Engine } from '../../engine/runtime.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const MiB = 2 ** 20;

function statusBytes(field: 'VmHWM' | 'VmRSS'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  if (!match) throw new Error(`no ${field} in /proc/self/status`);
  return Number(match[1]) * 1024;
}

/** Peak resident memory added by `fn` over the resident memory before it. */
async function peakAdded<T>(fn: () => Promise<T>): Promise<{ added: number; result: T }> {
  gc();
  writeFileSync('/proc/self/clear_refs', '5'); // resets VmHWM to the current RSS
  const before = statusBytes('VmRSS');
  const result = await fn();
  return { added: statusBytes('VmHWM') - before, result };
}

describe('memory per call (tiny checkpoint, the worst calls the default budgets admit)', () => {
  let checkpoint: Checkpoint;
  let engine: Gemma3Engine;
  // Garbage of earlier calls that the collector has not taken yet, the V8 heap of the results: a fixed allowance.
  const slack = 96 * MiB;
  beforeAll(async () => {
    checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    engine = await Gemma3Engine.create({ checkpoint });
    await engine.generate([[2, 105, 106]], { maxNewTokens: 2 }); // sessions warm
  });
  afterAll(async () => {
    await engine.close();
    checkpoint.close();
  });

  it('run_target: 8 × 4,095-token prompts add at most the KV cache and one chunk', async () => {
    const prompts = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 4095 }, (_, i) => 2 + ((i * 7919 + b) % 200_000)),
    );
    const bound = callMemoryBytes(checkpoint.config, { batch: 8, tokens: 4096 });
    const { added, result } = await peakAdded(() => engine.generate(prompts, { maxNewTokens: 1 }));
    process.stderr.write(
      `generate 8 × 4095: peak added ${(added / MiB).toFixed(0)} MiB; bound ${(bound.total / MiB).toFixed(0)} MiB (cache ${(bound.cache / MiB).toFixed(0)})\n`,
    );
    expect(result).toHaveLength(8);
    expect(added).toBeLessThanOrEqual(bound.total + slack);
    // Returned when the call ends: what stays is far below what the call used.
    gc();
    const after = statusBytes('VmRSS');
    writeFileSync('/proc/self/clear_refs', '5');
    expect(statusBytes('VmHWM') - after).toBeLessThan(MiB * 8); // sanity: the reset works
  });

  it('inspect_target: 4,095 positions at 4 layers add at most the KV cache, one chunk and the result', async () => {
    const ids = Array.from({ length: 4095 }, (_, i) => 2 + ((i * 104_729) % 200_000));
    const layers = [0, 1, 2, 3];
    const H = checkpoint.config.hidden_size;
    const resultBytes = 4095 * (layers.length + 1) * H * 4 + 4095 * 64; // hidden rows, normed rows, log-probs and top-k
    const bound = callMemoryBytes(checkpoint.config, { batch: 1, tokens: 4095 });
    const { added, result } = await peakAdded(() =>
      engine.inspect([{ ids, start: 0, end: 4095 }], { layers, topK: 5 }),
    );
    process.stderr.write(
      `inspect 4095 × 4 layers: peak added ${(added / MiB).toFixed(0)} MiB; bound ${((bound.total + resultBytes) / MiB).toFixed(0)} MiB\n`,
    );
    expect(result[0]!.nextTokenLogprobs).toHaveLength(4095);
    expect(added).toBeLessThanOrEqual(bound.total + resultBytes + slack);
  });
});
