import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { LogSoftmax } from '../../engine/head.ts';
import { Gemma3Engine } from '../../engine/runtime.ts';
import { resolveSettings } from '../../engine/settings.ts';
import { kernelInfo, useIsa } from '../../engine/kernels.ts';
import { checkpointSource, overlaySource } from '../../engine/weight-source.ts';
import { bf16ToF32, f32ToBf16Bits } from '../../engine/bf16.ts';
import { Tokenizer } from '../../engine/tokenizer.ts';
import { expectedTextTensors, finalNormName, layerTensorNames } from '../../engine/names.ts';
import { referenceForward } from '../reference/gemma3-forward.ts';
import { fixtureCheckpoint, relativeError, sameBits, type FixturePreset } from '../fixtures.ts';

function argmaxRow(logits: Float32Array, row: number, vocab: number): number {
  let best = 0;
  for (let i = 1; i < vocab; i++) if (logits[row * vocab + i]! > logits[row * vocab + best]!) best = i;
  return best;
}

// 23 tokens: longer than both presets' sliding windows (8 and 6), so local and global layers differ.
const IDS = [
  2, 105, 2364, 107, 818, 5279, 529, 9079, 563, 236881, 669, 2481, 15579, 529, 1040, 236764, 1041, 506, 2480, 106, 107,
  105, 4368,
];

/**
 * The oracle's logits (test/reference), computed once per checkpoint and ids: the engine and each path below are
 * checked against the same sequences, and the oracle takes ~0.8 s for 23 tiny positions.
 */
const references = new WeakMap<Checkpoint, Map<string, Float32Array>>();
function reference(checkpoint: Checkpoint, ids: number[]): Float32Array {
  if (!references.has(checkpoint)) references.set(checkpoint, new Map());
  const known = references.get(checkpoint)!;
  const key = ids.join(',');
  if (!known.has(key)) known.set(key, referenceForward(checkpoint, ids));
  return known.get(key)!;
}

/**
 * Greedy generation of a left-padded batch of two prompts (12 and 5 tokens of IDS) through the KV cache, every
 * step's logits checked against a full recomputation of the sequence so far; returns what was compared.
 */
async function decodeAgainstRecomputation(
  engine: Gemma3Engine,
  checkpoint: Checkpoint,
  maxNewTokens: number,
): Promise<{ prompt: number[]; outputIds: number[]; recomputed: Float32Array }[]> {
  const V = checkpoint.config.vocab_size;
  const prompts = [IDS.slice(0, 12), IDS.slice(0, 5)];
  const steps: Float32Array[][] = [[], []];
  const results = await engine.generate(prompts, {
    maxNewTokens,
    onLogits: (i, logits) => steps[i]!.push(logits.slice()),
  });
  return results.map(({ outputIds }, i) => {
    const prompt = prompts[i]!;
    const recomputed = reference(checkpoint, [...prompt, ...outputIds]);
    steps[i]!.forEach((logits, step) => {
      const row = recomputed.subarray((prompt.length - 1 + step) * V, (prompt.length + step) * V);
      expect(relativeError(logits, row)).toBeLessThan(1e-4);
    });
    return { prompt, outputIds, recomputed };
  });
}

/** The addon's paths this CPU runs (every engine test below runs on the one in force), or the fallback alone. */
const PATHS = kernelInfo().available;
const IN_FORCE = kernelInfo().isa;

describe('the engine settings', () => {
  it('resolve from the options alone, and refuse one that names nothing valid', () => {
    expect(resolveSettings({ threads: 3 })).toMatchObject({
      precision: 'bf16',
      device: 'cpu',
      threads: 3,
      chunkRows: 512,
    });
    expect(() => resolveSettings({ chunkRows: 0 })).toThrow(/chunkRows must be a positive integer, got 0/);
  });
});

for (const preset of ['tiny', 'tiny-4b'] as FixturePreset[]) {
  describe(`Gemma3Engine on ${preset}`, () => {
    let checkpoint: Checkpoint;
    let engine: Gemma3Engine;
    let tokenizer: Tokenizer;
    beforeAll(async () => {
      checkpoint = Checkpoint.open(fixtureCheckpoint(preset));
      tokenizer = await Tokenizer.load(fixtureCheckpoint(preset));
      engine = await Gemma3Engine.create({ checkpoint, precision: 'float32' });
    });
    afterAll(async () => {
      await engine.close();
      checkpoint.close();
    });

    it('matches the reference forward pass past the sliding window (max |Δlogit| ≤ 1e-4 · max |logit|)', async () => {
      expect(IDS.length).toBeGreaterThan(checkpoint.config.sliding_window * 2);
      const graph = await engine.logits(IDS, { chunk: IDS.length });
      expect(relativeError(graph, reference(checkpoint, IDS))).toBeLessThan(1e-4);
    });

    it('decodes through the KV cache exactly as full recomputation', async () => {
      const full = await engine.logits(IDS, { chunk: IDS.length });
      const oneByOne = await engine.logits(IDS, { chunk: 1 });
      const chunked = await engine.logits(IDS, { chunk: 5 });
      expect(relativeError(oneByOne, full)).toBeLessThan(1e-5);
      expect(relativeError(chunked, full)).toBeLessThan(1e-5);
      // Greedy generation through the cache, well past the sliding window; the tokens are the recomputation's too.
      const V = checkpoint.config.vocab_size;
      for (const { prompt, outputIds, recomputed } of await decodeAgainstRecomputation(engine, checkpoint, 12))
        outputIds.forEach((token, step) => expect(token).toBe(argmaxRow(recomputed, prompt.length - 1 + step, V)));
    });

    it('gives a mixed-length batch the same outputs as each sequence alone, deterministically', async () => {
      const prompts = [
        tokenizer.chatIds([{ role: 'user', content: 'What is the capital of France? Answer in one word, please.' }]),
        tokenizer.chatIds([{ role: 'user', content: 'Hi' }]),
        tokenizer.chatIds([
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Name a colour.' },
        ]),
      ];
      const batch = await engine.generate(prompts, { maxNewTokens: 12 });
      for (let i = 0; i < prompts.length; i++) {
        const [alone] = await engine.generate([prompts[i]!], { maxNewTokens: 12 });
        expect(batch[i]!.outputIds).toEqual(alone!.outputIds);
        expect(batch[i]!.promptTokens).toBe(prompts[i]!.length);
        expect(batch[i]!.outputTokens).toBe(alone!.outputIds.length);
      }
      const again = await engine.generate(prompts, { maxNewTokens: 12 });
      expect(again.map((r) => r.outputIds)).toEqual(batch.map((r) => r.outputIds));
    });

    it('streams each token as decoded and honours a per-sequence stop rule', async () => {
      const prompts = [IDS.slice(0, 9), IDS.slice(0, 14)];
      const streamed: number[][] = [[], []];
      const full = await engine.generate(prompts, { maxNewTokens: 6, onToken: (i, token) => streamed[i]!.push(token) });
      expect(streamed).toEqual(full.map((r) => r.outputIds));
      const stopped = await engine.generate(prompts, {
        maxNewTokens: 6,
        stopWhen: (i, ids) => i === 0 && ids.length === 2,
      });
      expect(stopped[0]!.outputIds).toEqual(full[0]!.outputIds.slice(0, 2));
      expect(stopped[0]!.stopReason).toBe('stop_rule');
      expect(stopped[1]!.outputIds).toEqual(full[1]!.outputIds);
    });

    it('loadWeights reads every text tensor of its source before any call, and nothing else', async () => {
      const read: string[] = [];
      const inner = checkpointSource(checkpoint);
      const counted = await Gemma3Engine.create({
        checkpoint,
        precision: 'float32',
        source: { bf16: (name) => (read.push(name), inner.bf16(name)) },
      });
      expect(read).toEqual([]); // on first use only, unless asked
      counted.loadWeights();
      expect(new Set(read)).toEqual(new Set(expectedTextTensors(checkpoint.config).keys()));
      await counted.close();
    });

    it('inspects a position to the same bits whatever is inspected with it, and as log-softmax of its logits', async () => {
      // 100 positions cut the vocabulary into two blocks, 6 into one: the sums run per chunk, not per block.
      const ids = [...IDS, ...IDS, ...IDS, ...IDS, ...IDS].slice(0, 101);
      const options = { layers: [], topK: 5 };
      const [many] = await engine.inspect([{ ids, start: 0, end: 100 }], options);
      const [few] = await engine.inspect([{ ids, start: 50, end: 56 }], options);
      expect(few!.nextTokenLogprobs).toEqual(many!.nextTokenLogprobs.slice(50, 56));
      expect(few!.topK).toEqual(many!.topK.slice(50, 56));
      // The engine's one log-softmax (the OpenAI endpoints score generated tokens with it) on the logits of a position.
      const V = checkpoint.config.vocab_size;
      const logits = await engine.logits(ids);
      const row = logits.subarray(53 * V, 54 * V);
      const softmax = new LogSoftmax(1, V, 5);
      softmax.add(row, 0, V);
      const lse = softmax.logSumExp(0);
      expect(Math.fround(row[ids[54]!]! - lse)).toBe(few!.nextTokenLogprobs[3]);
      expect(softmax.topOf(0).ids).toEqual(few!.topK[3]!.ids);
    });

    it('gives the same results whatever the prefill chunk size (bitwise for generation)', async () => {
      // chunkRows 4: prompts cross many chunk boundaries; the default prefills them in one chunk.
      const small = await Gemma3Engine.create({ checkpoint, precision: 'float32', chunkRows: 4 });
      const base = await engine.logits(IDS);
      expect(relativeError(await small.logits(IDS), base)).toBeLessThan(1e-5);
      const prompts = [IDS.slice(0, 21), IDS.slice(3, 9)];
      const [a, b] = [
        await small.generate(prompts, { maxNewTokens: 8 }),
        await engine.generate(prompts, { maxNewTokens: 8 }),
      ];
      expect(a.map((r) => r.outputIds)).toEqual(b.map((r) => r.outputIds));
      const [inspectSmall, inspectBase] = [
        await small.inspect([{ ids: IDS, start: 2, end: 20 }], { layers: [1], topK: 4 }),
        await engine.inspect([{ ids: IDS, start: 2, end: 20 }], { layers: [1], topK: 4 }),
      ];
      inspectBase[0]!.nextTokenLogprobs.forEach((lp, i) =>
        expect(inspectSmall[0]!.nextTokenLogprobs[i]).toBeCloseTo(lp, 4),
      );
      expect(inspectSmall[0]!.topK.map((t) => t.ids)).toEqual(inspectBase[0]!.topK.map((t) => t.ids));
      expect(relativeError(inspectSmall[0]!.hidden[1]![17]!, inspectBase[0]!.hidden[1]![17]!)).toBeLessThan(1e-5);
      await small.close();
    });

    it('sees new weight values at the next run, with no rebuild', async () => {
      const name = layerTensorNames(checkpoint.config.tensor_prefix, 1).down_proj;
      const pristine = checkpointSource(checkpoint);
      // Not a uniform scale: the post-feed-forward RMSNorm would cancel it. Edited in place, as the store does.
      const edited = pristine.bf16(name).slice();
      const source = overlaySource(pristine, new Map([[name, edited]]));
      const before = await engine.logits(IDS, { weights: source });
      for (let i = 0; i < edited.length; i += 7)
        edited[i] = f32ToBf16Bits(bf16ToF32(edited.subarray(i, i + 1))[0]! + 0.5);
      const after = await engine.logits(IDS, { weights: source });
      expect(relativeError(after, before)).toBeGreaterThan(1e-3);
      expect(relativeError(await engine.logits(IDS), before)).toBe(0);
    });

    it('inspects: next-token log-probabilities, top-k and residual streams consistent with the logits', async () => {
      const logits = await engine.logits(IDS);
      const V = checkpoint.config.vocab_size;
      const last = checkpoint.config.num_hidden_layers - 1;
      const [result] = await engine.inspect([{ ids: IDS, start: 4, end: 10 }], { layers: [0, last], topK: 5 });
      expect(result!.positions).toEqual([4, 5, 6, 7, 8, 9]);
      result!.positions.forEach((p, i) => {
        let max = -Infinity;
        for (let v = 0; v < V; v++) max = Math.max(max, logits[p * V + v]!);
        let sum = 0;
        for (let v = 0; v < V; v++) sum += Math.exp(logits[p * V + v]! - max);
        const logprob = logits[p * V + IDS[p + 1]!]! - max - Math.log(sum);
        expect(result!.nextTokenLogprobs[i]).toBeCloseTo(logprob, 3);
        expect(result!.topK[i]!.ids[0]).toBe(argmaxRow(logits, p, V));
        expect([...result!.topK[i]!.logprobs].sort((a, b) => b - a)).toEqual(result!.topK[i]!.logprobs);
      });
      // The last layer's residual stream, through the final norm and the tied head, gives back the logits.
      const norm = checkpoint.readF32(finalNormName(checkpoint.config.tensor_prefix));
      const embed = checkpoint.readF32(`${checkpoint.config.tensor_prefix}embed_tokens.weight`);
      const H = checkpoint.config.hidden_size;
      const h = result!.hidden[last]![2]!; // position 6
      const meanSquare = h.reduce((a, x) => a + x * x, 0) / H;
      const normed = h.map((x, i) => (x / Math.sqrt(meanSquare + checkpoint.config.rms_norm_eps)) * (1 + norm[i]!));
      for (const token of [IDS[7]!, 0, 1000]) {
        const value = normed.reduce((a, x, i) => a + x * embed[token * H + i]!, 0);
        expect(value).toBeCloseTo(logits[6 * V + token]!, 3);
      }
      expect(result!.hidden[0]![2]).not.toEqual(h);
    });

    describe.each(PATHS)('on the %s path', (isa) => {
      let onPath: Gemma3Engine;
      const take = (path: string) => void (path !== 'javascript' && useIsa(path));
      beforeAll(async () => {
        take(isa);
        onPath = await Gemma3Engine.create({ checkpoint, precision: 'float32' });
      });
      afterAll(async () => {
        await onPath.close();
        take(IN_FORCE);
      });

      it('matches the reference forward pass, and gives the same bits whatever the chunk size and the path', async () => {
        const logits = await onPath.logits(IDS, { chunk: IDS.length });
        expect(relativeError(logits, reference(checkpoint, IDS))).toBeLessThan(1e-4);
        expect(sameBits(await onPath.logits(IDS, { chunk: 1 }), logits)).toBe(true);
        expect(sameBits(await onPath.logits(IDS, { chunk: 5 }), logits)).toBe(true);
        take(IN_FORCE);
        expect(sameBits(await onPath.logits(IDS, { chunk: 7 }), logits)).toBe(true);
        take(isa);
      });

      it('decodes through the cache as full recomputation', async () => {
        await decodeAgainstRecomputation(onPath, checkpoint, 8);
      });

      it('gives each prompt of a batch its own results, bit for bit as alone', async () => {
        const prompts = [IDS.slice(0, 12), IDS.slice(0, 5), IDS.slice(3, 20), IDS.slice(6, 9)];
        const first: Float32Array[] = [];
        const batch = await onPath.generate(prompts, {
          maxNewTokens: 6,
          onLogits: (i, logits) => void (first[i] ??= logits.slice()),
        });
        for (let i = 0; i < prompts.length; i++) {
          let alone: Float32Array | undefined;
          const [result] = await onPath.generate([prompts[i]!], {
            maxNewTokens: 6,
            onLogits: (_, logits) => void (alone ??= logits.slice()),
          });
          expect(batch[i]!.outputIds).toEqual(result!.outputIds);
          expect(sameBits(first[i]!, alone!)).toBe(true);
        }
      });
    });

    it('refuses bad requests clearly', async () => {
      await expect(Gemma3Engine.create({ checkpoint, precision: 'float32', chunkRows: 0 })).rejects.toThrow(
        /chunkRows must be a positive integer, got 0/,
      );
      await expect(engine.generate([], { maxNewTokens: 4 })).rejects.toThrow(/1…8 prompts/);
      await expect(
        engine.generate(
          Array.from({ length: 9 }, () => [2]),
          { maxNewTokens: 4 },
        ),
      ).rejects.toThrow(/1…8 prompts, got 9/);
      await expect(engine.generate([[2, checkpoint.config.vocab_size]], { maxNewTokens: 4 })).rejects.toThrow(
        /token id \d+ is outside the vocabulary/,
      );
      await expect(engine.generate([[2, 3]], { maxNewTokens: 0 })).rejects.toThrow(
        /maxNewTokens must be a positive integer/,
      );
      await expect(engine.inspect([{ ids: IDS, start: 5, end: 5 }], { layers: [0], topK: 3 })).rejects.toThrow(
        /not a non-empty range/,
      );
      await expect(engine.inspect([{ ids: IDS, start: 0, end: 2 }], { layers: [99], topK: 3 })).rejects.toThrow(
        /layer 99 is outside/,
      );
    });
  });
}
