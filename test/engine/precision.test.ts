// The engine's two precisions. bf16 (the default) is held to PyTorch BF16's own error: its logits against Hugging Face
// transformers' float32 logits (test/golden, make_golden.py) are no further off than HF's BF16 run on the same
// checkpoint, on every product path. Both precisions are batch-invariant: each sequence's tokens and logits are the
// same bits at any batch limit and beside any other sequences.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../engine/checkpoint.ts';
import type { GenerateSequence } from '../../engine/generate.ts';
import { kernelInfo } from '../../engine/kernels.ts';
import { Gemma3Engine, type EngineOptions } from '../../engine/runtime.ts';
import type { Precision } from '../../engine/settings.ts';
import { REPO_ROOT, fixtureCheckpoint, bitsDigest, seededRandom, type FixturePreset } from '../fixtures.ts';

type Golden = {
  ids: number[];
  vocab_ids: number[];
  logits: number[][];
  argmax: number[];
  bf16_error: Record<'eager' | 'sdpa', { max_abs_error: number; argmax_differs: number }>;
};

/** The CPU's path in force (every other gives its bits) and a device's graphs (onnxruntime's CPU provider). */
const paths: [string, Partial<EngineOptions>][] = [
  [`the CPU's ${kernelInfo().isa} path`, {}],
  ['--device ort-cpu', { device: 'ort-cpu' }],
];

for (const preset of ['tiny', 'tiny-4b'] as FixturePreset[]) {
  describe(`bf16 precision on ${preset} against Hugging Face transformers' float32 and BF16 runs`, () => {
    const golden = JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/golden', `${preset}.json`), 'utf8')) as Golden;
    // HF's two BF16 attention implementations differ from float32 by different amounts: the larger is BF16's error.
    const bound = Math.max(golden.bf16_error.eager.max_abs_error, golden.bf16_error.sdpa.max_abs_error);
    const argmaxBound = Math.max(golden.bf16_error.eager.argmax_differs, golden.bf16_error.sdpa.argmax_differs);

    /** The largest |logit − HF float32's| over the golden positions and vocab ids, and the argmaxes that differ. */
    async function error(options: Partial<EngineOptions>) {
      const checkpoint = Checkpoint.open(fixtureCheckpoint(preset));
      const engine = await Gemma3Engine.create({ checkpoint, ...options });
      const logits = await engine.logits(golden.ids, { chunk: 7 });
      await engine.close();
      checkpoint.close();
      const V = checkpoint.config.vocab_size;
      let maxError = 0;
      let argmaxDiffers = 0;
      golden.ids.forEach((_, t) => {
        golden.vocab_ids.forEach((id, k) => {
          maxError = Math.max(maxError, Math.abs(logits[t * V + id]! - golden.logits[t]![k]!));
        });
        const row = logits.subarray(t * V, (t + 1) * V);
        let best = 0;
        for (let i = 1; i < V; i++) if (row[i]! > row[best]!) best = i;
        if (best !== golden.argmax[t]) argmaxDiffers++;
      });
      return { maxError, argmaxDiffers };
    }

    for (const [name, options] of paths)
      it(`is no further from float32 than PyTorch BF16 is (${name})`, async () => {
        const bf16 = await error(options);
        expect(bf16.maxError).toBeLessThanOrEqual(bound);
        expect(bf16.argmaxDiffers).toBeLessThanOrEqual(argmaxBound);
        // It is BF16 arithmetic, not float32's: the error is of BF16's size, far above float32's (≤ 1e-4 there).
        expect(bf16.maxError).toBeGreaterThan(bound / 10);
        expect((await error({ ...options, precision: 'float32' })).maxError).toBeLessThan(1e-3);
      });
  });
}

describe('batch invariance in both precisions', () => {
  let checkpoint: Checkpoint;
  beforeAll(() => {
    checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
  });
  afterAll(() => checkpoint.close());

  // 120 sequences, as an episode's evaluation: prompts of 2–20 tokens from a seeded stream, caps of 1–6 tokens.
  const random = seededRandom(120);
  const sequences: GenerateSequence[] = Array.from({ length: 120 }, () => {
    const length = 2 + Math.floor(random() * 19);
    return {
      ids: [2, ...Array.from({ length: length - 1 }, () => 200 + Math.floor(random() * 4000))],
      maxNewTokens: 1 + Math.floor(random() * 6),
    };
  });

  for (const precision of ['bf16', 'float32'] as Precision[])
    it(`gives every sequence the same tokens and logits at 1, 7, 32 and 120 rows (${precision})`, async () => {
      const engine = await Gemma3Engine.create({ checkpoint, precision });
      try {
        const runs = [];
        for (const maxBatch of [1, 7, 32, 120]) {
          const logits: string[][] = sequences.map(() => []); // each step's row by its digest (a row: 1 MiB)
          const results = await engine.generateMany(sequences, {
            maxBatch,
            onLogits: (i, row) => logits[i]!.push(bitsDigest(row)),
          });
          runs.push({ results, logits });
        }
        const [first, ...others] = runs;
        for (const other of others)
          sequences.forEach((_, i) => {
            expect(other.results[i]).toEqual(first!.results[i]);
            expect(other.logits[i]).toEqual(first!.logits[i]);
          });
      } finally {
        await engine.close();
      }
    });
});

describe('the precision setting', () => {
  it('refuses a precision that names nothing', async () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    try {
      await expect(Gemma3Engine.create({ checkpoint, precision: 'bf8' as Precision })).rejects.toThrow(
        /precision must be bf16 or float32, got "bf8"/,
      );
    } finally {
      checkpoint.close();
    }
  });
});
