// The service's engine in a worker thread gives what the engine gives in-process, with the same hooks, reads the
// store's shared arrays in place (an edit is seen by the next call), and leaves the event loop free while it runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { EngineHost } from '../../engine/engine-host.ts';
import { Gemma3Engine } from '../../engine/runtime.ts';
import { checkpointSource, copyBf16, overlaySource } from '../../engine/weight-source.ts';
import { layerTensorNames } from '../../engine/names.ts';
import { fixtureCheckpoint, sameBits } from '../fixtures.ts';

const IDS = [
  2, 105, 2364, 107, 818, 5279, 529, 9079, 563, 236881, 669, 2481, 15579, 529, 1040, 236764, 1041, 506, 2480, 106, 107,
  105, 4368,
];

describe('EngineHost (worker thread)', () => {
  let checkpoint: Checkpoint;
  let engine: Gemma3Engine;
  let host: EngineHost;
  const pristine = () => checkpointSource(checkpoint);
  beforeAll(async () => {
    checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    const source = pristine();
    engine = await Gemma3Engine.create({ checkpoint, source });
    host = await EngineHost.start(checkpoint, source);
  });
  afterAll(async () => {
    await host.close();
    await engine.close();
    checkpoint.close();
  });

  it('generates, inspects and computes logits exactly as the engine in-process, hooks included', async () => {
    const prompts = [IDS.slice(0, 12), IDS.slice(0, 5)];
    const tokens: number[][] = [[], []];
    const logitsSeen: number[] = [];
    const options = { maxNewTokens: 6, stopWhen: (i: number, ids: readonly number[]) => i === 1 && ids.length === 3 };
    const hosted = await host.generate(prompts, {
      ...options,
      onToken: (i, t) => tokens[i]!.push(t),
      onLogits: (i, l) => logitsSeen.push(l.length),
    });
    const direct = await engine.generate(prompts, options);
    expect(hosted).toEqual(direct);
    expect(tokens).toEqual(direct.map((r) => r.outputIds));
    expect(hosted[1]!.stopReason).toBe('stop_rule');
    expect(new Set(logitsSeen)).toEqual(new Set([checkpoint.config.vocab_size]));
    const request = [{ ids: IDS, start: 3, end: 15 }];
    expect(await host.inspect(request, { layers: [1, 4], topK: 3 })).toEqual(
      await engine.inspect(request, { layers: [1, 4], topK: 3 }),
    );
    expect(sameBits(await host.logits(IDS, { chunk: 5 }), await engine.logits(IDS, { chunk: 5 }))).toBe(true);
  });

  it('reads shared weights in place: an edit made between calls is seen by the next call', async () => {
    const name = layerTensorNames(checkpoint.config.tensor_prefix, 2).down_proj;
    const edited = copyBf16(pristine().bf16(name));
    const weights = overlaySource(pristine(), new Map([[name, edited]]));
    const before = await host.logits(IDS, { weights });
    for (let i = 0; i < edited.length; i += 5) edited[i] = 0x3f80; // 1.0
    const after = await host.logits(IDS, { weights });
    expect(sameBits(after, before)).toBe(false);
    expect(sameBits(after, await engine.logits(IDS, { weights }))).toBe(true);
    const unshared = overlaySource(pristine(), new Map([[name, edited.slice()]]));
    await expect(host.logits(IDS, { weights: unshared })).rejects.toThrow(/not in shared memory/);
  });

  it('stops a call at its next slice when its control says so, and keeps serving', async () => {
    let slices = 0;
    const stop = new Error('stopped by the queue');
    const call = host.generate([IDS], {
      maxNewTokens: 20,
      between: async () => {
        if (++slices === 3) throw stop;
      },
    });
    await expect(call).rejects.toBe(stop);
    const controller = new AbortController();
    controller.abort();
    await expect(host.generate([IDS], { maxNewTokens: 4, signal: controller.signal })).rejects.toThrow(/abort/i);
    expect((await host.generate([IDS.slice(0, 4)], { maxNewTokens: 2 }))[0]!.outputIds).toEqual(
      (await engine.generate([IDS.slice(0, 4)], { maxNewTokens: 2 }))[0]!.outputIds,
    );
  });

  it('leaves the event loop free while a long call runs (figure on stderr)', async () => {
    const prompts = Array.from({ length: 8 }, (_, b) =>
      Array.from({ length: 1500 }, (_, i) => 2 + ((i * 7919 + b) % 200_000)),
    );
    let ticks = 0;
    let maxGap = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 5);
    const started = performance.now();
    await host.generate(prompts, { maxNewTokens: 2 });
    const ms = performance.now() - started;
    clearInterval(timer);
    process.stderr.write(
      `engine host: an 8 × 1500-token call ran ${ms.toFixed(0)} ms; event loop ticked ${ticks} times, longest gap ${maxGap.toFixed(1)} ms\n`,
    );
    // Structural, not timed: timers kept firing throughout the call (in-process, none would fire until it ended).
    expect(ticks).toBeGreaterThan(ms / 5 / 4);
  });
});

describe('EngineHost on the device path (--device ort-cpu)', () => {
  it('gives what the device engine gives in-process, and sees an edit made in place between calls', async () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    const pristine = checkpointSource(checkpoint);
    const engine = await Gemma3Engine.create({ checkpoint, source: pristine, device: 'ort-cpu' });
    const host = await EngineHost.start(checkpoint, pristine, { device: 'ort-cpu' });
    try {
      const prompts = [IDS.slice(0, 12), IDS.slice(0, 5)];
      expect(await host.generate(prompts, { maxNewTokens: 4 })).toEqual(
        await engine.generate(prompts, { maxNewTokens: 4 }),
      );
      // The worker marks the pristine arrays stable (kept on the device) and the episode's copy not (sent per call).
      const name = layerTensorNames(checkpoint.config.tensor_prefix, 3).up_proj;
      const edited = copyBf16(pristine.bf16(name));
      const weights = overlaySource(pristine, new Map([[name, edited]]));
      const before = await host.logits(IDS, { weights });
      expect(sameBits(before, await engine.logits(IDS, { weights }))).toBe(true);
      for (let i = 0; i < edited.length; i += 5) edited[i] = 0x3f80; // 1.0
      const after = await host.logits(IDS, { weights });
      expect(sameBits(after, before)).toBe(false);
      expect(sameBits(after, await engine.logits(IDS, { weights }))).toBe(true);
    } finally {
      await host.close();
      await engine.close();
      checkpoint.close();
    }
  });
});
