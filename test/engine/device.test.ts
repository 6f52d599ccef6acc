// --device (device.ts): the device path, run here by onnxruntime's CPU provider ('ort-cpu'), the only provider this
// machine has: weights go to the device once, an edit uploads its tensor only, the head's parts and ranges are exact,
// and an unusable device is refused before slow work. The golden logits on this path: golden.test.ts.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../../engine/bf16.ts';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { DeviceProjections, checkDevice, prepareDevice } from '../../engine/device.ts';
import { matmulBf16 } from '../../engine/kernels.ts';
import { embedTokensName, expectedTextTensors, layerTensorNames } from '../../engine/names.ts';
import { Gemma3Engine } from '../../engine/runtime.ts';
import { checkpointSource, overlaySource, type WeightSource } from '../../engine/weight-source.ts';
import { Target } from '../../service/target.ts';
import { fixtureCheckpoint, relativeError, seededRandom } from '../fixtures.ts';

const IDS = [2, 105, 2364, 107, 818, 5279, 529, 9079, 563, 236881, 669, 2481];

describe('checkDevice and prepareDevice', () => {
  it('refuse an unknown device, naming the choices', () => {
    expect(() => checkDevice('tpu')).toThrow('--device must be one of cpu, cuda, webgpu, ort-cpu, got "tpu"');
    expect(() => checkDevice('webgpu')).not.toThrow();
  });

  it('turn TF32 off for cuda and refuse it where its provider libraries are absent, with onnxruntime reason; accept ort-cpu', async () => {
    const require = createRequire(import.meta.url);
    const binding = path.dirname(require.resolve('onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node'));
    const saved = process.env.NVIDIA_TF32_OVERRIDE;
    delete process.env.NVIDIA_TF32_OVERRIDE;
    try {
      if (existsSync(path.join(binding, 'libonnxruntime_providers_cuda.so'))) await prepareDevice('cuda');
      else
        await expect(prepareDevice('cuda')).rejects.toThrow(
          /^--device cuda: onnxruntime cannot use its cuda provider .*; its CUDA provider needs CUDA 12 and cuDNN 9 .*: node node_modules\/onnxruntime-node\/script\/install\.js$/s,
        );
      expect(process.env.NVIDIA_TF32_OVERRIDE).toBe('0'); // float32 products, not TF32, set before CUDA starts
    } finally {
      if (saved === undefined) delete process.env.NVIDIA_TF32_OVERRIDE;
      else process.env.NVIDIA_TF32_OVERRIDE = saved;
    }
    await prepareDevice('ort-cpu');
  });

  it('the target refuses an unknown device before opening the checkpoint (a missing folder is not what it says)', async () => {
    await expect(
      Target.load({ modelDir: '/nonexistent/iwibench-checkpoint' }, { device: 'tpu' as 'cpu' }),
    ).rejects.toThrow(/^--device must be one of/);
  });
});

describe('DeviceProjections on the CPU provider', () => {
  // 37 rows of 19 in parts of 5 rows (95 elements): ranges inside one part, across parts, and every row.
  const [N, K, M] = [37, 19, 3];
  const uniform = seededRandom(11);
  const random = () => uniform() * 2 - 1;
  const bits = f32ToBf16(Float32Array.from({ length: N * K }, random));
  const widened = bf16ToF32(bits);
  const source: WeightSource = { bf16: () => bits };
  const make = () =>
    new DeviceProjections('ort-cpu', {
      engineSource: source,
      headName: 'head',
      shapeOf: () => [N, K],
      sessionOptions: {
        executionProviders: ['cpu'],
        extra: { optimization: { disable_specified_optimizers: 'ConstantFolding' } },
      },
      partElements: 5 * K,
    });

  it('one-hot rows give the BF16 weights exactly, in every range, from parts of 5 rows', async () => {
    const projections = make();
    const x = new Float32Array(M * K);
    [2, 0, 18].forEach((column, m) => (x[m * K + column] = 1));
    for (const [start, count] of [
      [0, N],
      [3, 2],
      [4, 7],
      [35, 2],
      [10, 21],
    ] as const) {
      const y = await projections.project(source, 'head', x, M, { start, count });
      const expected = new Float32Array(M * count);
      [2, 0, 18].forEach((column, m) => {
        for (let n = 0; n < count; n++) expected[m * count + n] = widened[(start + n) * K + column]!;
      });
      expect(Array.from(y)).toEqual(Array.from(expected));
    }
    expect(projections.uploads.get('head')).toBe(1); // 8 sessions, made once
    await projections.release();
  });

  it('agrees with the BF16 kernel on random rows, and a tensor asked for two ways is refused', async () => {
    const projections = make();
    const x = Float32Array.from({ length: M * K }, random);
    const kernel = new Float32Array(M * N);
    matmulBf16(x, bits, kernel, M, N, K);
    const all = await projections.project(source, 'w', x, M);
    expect(relativeError(all, kernel)).toBeLessThan(1e-6);
    await expect(projections.project(source, 'w', x, M, { start: 0, count: 4 })).rejects.toThrow(
      '"w" is projected both with and without a row range',
    );
    await projections.release();
  });
});

describe('the engine on --device ort-cpu', () => {
  it('uploads each weight once, an edited tensor once per call, and sees the edit', async () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    const c = checkpoint.config;
    const engine = await Gemma3Engine.create({ checkpoint, precision: 'float32', device: 'ort-cpu' });
    const kernelEngine = await Gemma3Engine.create({ checkpoint, precision: 'float32' });
    try {
      const base = await engine.logits(IDS);
      const uploads = new Map(engine.deviceUploads);
      // Every projection weight: 7 per layer and the tied head, once each.
      expect(uploads.size).toBe(7 * c.num_hidden_layers + 1);
      expect([...uploads.values()].every((count) => count === 1)).toBe(true);
      await engine.generate([IDS.slice(0, 5), IDS], { maxNewTokens: 3 });
      expect(new Map(engine.deviceUploads)).toEqual(uploads); // nothing again

      // An episode's edit of one matrix: a call that marks the others stable, as the service's worker does.
      const pristine = checkpointSource(checkpoint);
      const edited = layerTensorNames(c.tensor_prefix, 1).down_proj;
      const bits = pristine.bf16(edited).slice();
      for (let i = 0; i < bits.length; i += 3) bits[i] = bits[i]! ^ 0x8000; // flip the sign of every third weight
      const overlay = overlaySource(pristine, new Map([[edited, bits]]));
      const episode: WeightSource = { bf16: overlay.bf16, stable: (name) => name !== edited };
      const patched = await engine.logits(IDS, { weights: episode });
      const afterOne = new Map(engine.deviceUploads);
      expect(afterOne.get(edited)).toBe(2);
      for (const name of expectedTextTensors(c).keys())
        if (name !== edited && uploads.has(name)) expect(afterOne.get(name)).toBe(1);
      await engine.logits(IDS, { weights: episode });
      expect(engine.deviceUploads!.get(edited)).toBe(3); // once per call

      // The edit is seen, and the device path agrees with the kernel path on the edited model.
      expect(relativeError(patched, base)).toBeGreaterThan(1e-3);
      const kernelPatched = await kernelEngine.logits(IDS, { weights: overlay });
      expect(relativeError(patched, kernelPatched)).toBeLessThan(1e-4);
      expect(relativeError(base, await kernelEngine.logits(IDS))).toBeLessThan(1e-4);

      // A source that marks nothing stable (a patch given with one call) uploads what it serves for that call.
      await engine.logits(IDS, { weights: overlay });
      expect(engine.deviceUploads!.get(embedTokensName(c.tensor_prefix))).toBe(2);
    } finally {
      await engine.close();
      await kernelEngine.close();
      checkpoint.close();
    }
  });

  it('inspects as the kernel path does: log-probabilities, top-k and residual streams to within rounding', async () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    const engine = await Gemma3Engine.create({ checkpoint, precision: 'float32', device: 'ort-cpu' });
    const kernelEngine = await Gemma3Engine.create({ checkpoint, precision: 'float32' });
    try {
      const request = [{ ids: IDS, start: 2, end: 11 }];
      const options = { layers: [0, 3], topK: 3 };
      const [device] = await engine.inspect(request, options);
      const [kernel] = await kernelEngine.inspect(request, options);
      expect(device!.positions).toEqual(kernel!.positions);
      device!.nextTokenLogprobs.forEach((lp, i) =>
        expect(Math.abs(lp - kernel!.nextTokenLogprobs[i]!)).toBeLessThan(1e-4),
      );
      expect(device!.topK.map((t) => t.ids)).toEqual(kernel!.topK.map((t) => t.ids));
      for (const layer of options.layers)
        device!.hidden[layer]!.forEach((row, t) =>
          expect(relativeError(row, kernel!.hidden[layer]![t]!)).toBeLessThan(1e-5),
        );
    } finally {
      await engine.close();
      await kernelEngine.close();
      checkpoint.close();
    }
  });

  it('a batch gives each prompt what it gives alone, greedily', async () => {
    const checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    const engine = await Gemma3Engine.create({ checkpoint, precision: 'float32', device: 'ort-cpu' });
    try {
      const prompts = [IDS.slice(0, 4), IDS, IDS.slice(2, 9)];
      const batch = await engine.generate(prompts, { maxNewTokens: 4 });
      for (const [i, prompt] of prompts.entries()) {
        const [alone] = await engine.generate([prompt], { maxNewTokens: 4 });
        expect(batch[i]!.outputIds).toEqual(alone!.outputIds);
      }
    } finally {
      await engine.close();
      checkpoint.close();
    }
  });
});
