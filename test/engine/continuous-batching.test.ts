// Continuous batching (Gemma3Engine.generateMany): sequences with their own caps, more than the batch limit, rows
// freed early and refilled; every sequence's tokens and every step's logits bitwise what it gives alone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16Bits } from '../../engine/bf16.ts';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { prefillPacks, type GenerateHooks, type GenerateResult, type GenerateSequence } from '../../engine/generate.ts';
import { embedTokensName } from '../../engine/names.ts';
import { Gemma3Engine } from '../../engine/runtime.ts';
import { checkpointSource, overlaySource, type WeightSource } from '../../engine/weight-source.ts';
import { fixtureCheckpoint, sameBits, type FixturePreset } from '../fixtures.ts';

const END_OF_TURN = 106;
// Prompts without <end_of_turn>, of 3 to 21 tokens (the tiny presets' windows are 8 and 6).
const IDS = [2, 105, 2364, 107, 818, 5279, 529, 9079, 563, 236881, 669, 2481, 15579, 529, 1040, 236764, 1041, 506];

type Run = { result: GenerateResult; logits: Float32Array };

function joined(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

/** Every sequence in one continuous batch, with each one's results and the logits of every step, joined. */
async function many(
  engine: Gemma3Engine,
  sequences: GenerateSequence[],
  maxBatch: number,
  hooks: GenerateHooks = {},
): Promise<Run[]> {
  const logits: Float32Array[][] = sequences.map(() => []);
  const results = await engine.generateMany(sequences, {
    ...hooks,
    maxBatch,
    onLogits: (i, row) => logits[i]!.push(row.slice()),
  });
  return results.map((result, i) => ({ result, logits: joined(logits[i]!) }));
}

/** The same sequence alone (engine.generate of one prompt, as the service's run_target and the evaluator call it). */
async function alone(engine: Gemma3Engine, sequence: GenerateSequence, index: number, hooks: GenerateHooks = {}) {
  const logits: Float32Array[] = [];
  const [result] = await engine.generate([sequence.ids], {
    weights: hooks.weights,
    maxNewTokens: sequence.maxNewTokens,
    stopWhen: hooks.stopWhen && ((_, ids) => hooks.stopWhen!(index, ids)),
    onLogits: (_, row) => logits.push(row.slice()),
  });
  return { result: result!, logits: joined(logits) };
}

async function expectEachAsAlone(engine: Gemma3Engine, sequences: GenerateSequence[], runs: Run[], hooks = {}) {
  for (const [i, sequence] of sequences.entries()) {
    const single = await alone(engine, sequence, i, hooks);
    expect(runs[i]!.result).toEqual(single.result);
    expect(sameBits(runs[i]!.logits, single.logits)).toBe(true);
  }
}

for (const preset of ['tiny', 'tiny-4b'] as FixturePreset[]) {
  describe(`continuous batching on ${preset}`, () => {
    let checkpoint: Checkpoint;
    let engine: Gemma3Engine;
    beforeAll(async () => {
      checkpoint = Checkpoint.open(fixtureCheckpoint(preset));
      engine = await Gemma3Engine.create({ checkpoint });
    });
    afterAll(async () => {
      await engine.close();
      checkpoint.close();
    });

    it('gives every sequence, with mixed caps and early stops, more of them than rows, what it gives alone', async () => {
      const sequences: GenerateSequence[] = [
        { ids: IDS.slice(0, 12), maxNewTokens: 9 },
        { ids: IDS.slice(0, 3), maxNewTokens: 2 },
        { ids: IDS.slice(2, 18), maxNewTokens: 12 },
        { ids: IDS.slice(5, 9), maxNewTokens: 1 },
        { ids: IDS.slice(1, 16), maxNewTokens: 7 },
        { ids: IDS.slice(0, 7), maxNewTokens: 10 },
        { ids: IDS.slice(4, 17), maxNewTokens: 5 },
      ];
      // Sequence 4 stops by its rule after 3 tokens, sequence 5 on its first: rows freed at different steps.
      const stopWhen = (i: number, ids: readonly number[]) => (i === 4 && ids.length === 3) || i === 5;
      const runs = await many(engine, sequences, 3, { stopWhen });
      expect(runs.map((r) => r.result.stopReason)).toEqual([
        'max_tokens',
        'max_tokens',
        'max_tokens',
        'max_tokens',
        'stop_rule',
        'stop_rule',
        'max_tokens',
      ]);
      expect(runs.map((r) => r.result.outputTokens)).toEqual([9, 2, 12, 1, 3, 1, 5]);
      await expectEachAsAlone(engine, sequences, runs, { stopWhen });
      // The batch limit changes nothing: all in flight at once, or one at a time.
      for (const maxBatch of [1, 7, 64]) {
        const other = await many(engine, sequences, maxBatch, { stopWhen });
        other.forEach((run, i) => {
          expect(run.result).toEqual(runs[i]!.result);
          expect(sameBits(run.logits, runs[i]!.logits)).toBe(true);
        });
      }
    });

    it('frees a row at a sequence’s own <end_of_turn>, at different steps, and refills it as alone', async () => {
      // <end_of_turn>'s row of the tied head made twice a common token's: wherever that token would win with a
      // positive logit, <end_of_turn> wins instead (the products scale exactly by 2), so sequences end early.
      const name = embedTokensName(checkpoint.config.tensor_prefix);
      const base = checkpointSource(checkpoint);
      const probe = await many(engine, [{ ids: IDS.slice(0, 12), maxNewTokens: 4 }], 1);
      const common = probe[0]!.result.outputIds[1]!;
      const H = checkpoint.config.hidden_size;
      const embed = base.bf16(name).slice();
      const row = bf16ToF32(embed.subarray(common * H, (common + 1) * H));
      for (let j = 0; j < H; j++) embed[END_OF_TURN * H + j] = f32ToBf16Bits(2 * row[j]!);
      const weights: WeightSource = overlaySource(base, new Map([[name, embed]]));
      const sequences: GenerateSequence[] = [
        { ids: IDS.slice(0, 12), maxNewTokens: 8 },
        ...[3, 5, 9, 14, 18].map((n, i) => ({ ids: IDS.slice(i, n), maxNewTokens: 6 + i })),
      ];
      const runs = await many(engine, sequences, 2, { weights });
      // The common token was sequence 0's second: it ends there at the latest; the others end at other steps.
      expect(runs[0]!.result.stopReason).toBe('end_of_turn');
      expect(runs[0]!.result.outputTokens).toBeLessThanOrEqual(1);
      expect(new Set(runs.map((r) => r.result.outputTokens)).size).toBeGreaterThan(2);
      // Some sequence stops on its very first token (its row freed straight after its prefill).
      expect(runs.some((r) => r.result.stopReason === 'end_of_turn' && r.result.outputTokens === 0)).toBe(true);
      await expectEachAsAlone(engine, sequences, runs, { weights });
    });

    it('runs one sequence as alone, and a sequence that stops on its first token', async () => {
      const one: GenerateSequence = { ids: IDS.slice(0, 10), maxNewTokens: 6 };
      await expectEachAsAlone(engine, [one], await many(engine, [one], 4));
      // Caps of 1: every row stops at its first token, each freed before any decode step.
      const firsts = [3, 8, 13].map((n) => ({ ids: IDS.slice(0, n), maxNewTokens: 1 }));
      const runs = await many(engine, firsts, 2);
      expect(runs.map((r) => r.result.outputTokens)).toEqual([1, 1, 1]);
      await expectEachAsAlone(engine, firsts, runs);
    });

    it('packs short prompts while they fit in a chunk, each still as alone', async () => {
      // Packs hold at most 24 rows; 25 tokens is chunked alone.
      const packed = await Gemma3Engine.create({ checkpoint, chunkRows: 24 });
      try {
        const longer = [...IDS, ...IDS.slice(0, 7)];
        const sequences: GenerateSequence[] = [
          { ids: IDS.slice(0, 3), maxNewTokens: 4 },
          { ids: IDS.slice(1, 6), maxNewTokens: 2 },
          { ids: IDS.slice(0, 9), maxNewTokens: 5 },
          { ids: IDS.slice(2, 13), maxNewTokens: 3 },
          { ids: longer, maxNewTokens: 4 },
          { ids: IDS.slice(3, 7), maxNewTokens: 6 },
          { ids: IDS.slice(0, 16), maxNewTokens: 2 },
          { ids: IDS.slice(4, 14), maxNewTokens: 5 },
        ];
        expect(prefillPacks([0, 1, 2, 3, 4, 5, 6, 7], sequences, packed.settings)).toEqual([
          [0, 1, 2],
          [3],
          [4],
          [5, 6],
          [7],
        ]);
        const runs = await many(packed, sequences, 8);
        await expectEachAsAlone(packed, sequences, runs);
        const fewer = await many(packed, sequences, 3);
        fewer.forEach((run, i) => expect(sameBits(run.logits, runs[i]!.logits)).toBe(true));
      } finally {
        await packed.close();
      }
    });

    it('streams each sequence’s tokens by its own index', async () => {
      const sequences = [5, 11, 16].map((n, i) => ({ ids: IDS.slice(0, n), maxNewTokens: 3 + 2 * i }));
      const streamed: number[][] = [[], [], []];
      const results = await engine.generateMany(sequences, {
        maxBatch: 2,
        onToken: (i, token) => streamed[i]!.push(token),
      });
      expect(streamed).toEqual(results.map((r) => r.outputIds));
    });

    it('refuses bad requests clearly', async () => {
      const ok = { ids: [2, 3], maxNewTokens: 2 };
      const refused = expect.objectContaining({ code: 'ENGINE_INPUT_INVALID' });
      await expect(engine.generateMany([], { maxBatch: 2 })).rejects.toThrow(/at least one sequence/);
      await expect(engine.generateMany([ok], { maxBatch: 0 })).rejects.toThrow(refused);
      await expect(engine.generateMany([ok], { maxBatch: 1.5 })).rejects.toThrow(/maxBatch must be a positive/);
      await expect(engine.generateMany([ok, { ids: [2], maxNewTokens: 0 }], { maxBatch: 2 })).rejects.toThrow(
        /maxNewTokens must be a positive integer, got 0/,
      );
      await expect(
        engine.generateMany([ok, { ids: [2, checkpoint.config.vocab_size], maxNewTokens: 1 }], { maxBatch: 2 }),
      ).rejects.toThrow(refused);
    });
  });
}
