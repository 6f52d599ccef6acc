// Our engine against Hugging Face transformers (Gemma3ForCausalLM / Gemma3ForConditionalGeneration, float32, eager)
// on the same tiny checkpoints: golden logits made by test/golden/make_golden.py (the command is in its header).
// On the CPU's path in force, and on the device path
// (device.ts) run by onnxruntime's CPU provider; IWIBENCH_TEST_DEVICE adds a device (scripts/device-check.sh sets it to
// the GPU provider that runs).
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { Gemma3Engine, type EngineOptions } from '../../engine/runtime.ts';
import { kernelInfo } from '../../engine/kernels.ts';
import { checkDevice, type Device } from '../../engine/device.ts';
import { FIXTURE_SEED, REPO_ROOT, fixtureCheckpoint, type FixturePreset } from '../fixtures.ts';

type Golden = {
  checkpoint_sha256: string;
  ids: number[];
  vocab_ids: number[];
  logits: number[][];
  argmax: number[];
  logsumexp: number[];
  max_abs_logit: number;
};

function checkpointDigest(dir: string): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.safetensors'))
    .sort())
    hash.update(readFileSync(path.join(dir, file)));
  return hash.digest('hex');
}

const extra = process.env.IWIBENCH_TEST_DEVICE;
checkDevice(extra);
const devices: Device[] = ['cpu', 'ort-cpu', ...(extra && extra !== 'cpu' && extra !== 'ort-cpu' ? [extra] : [])];

/**
 * The path of a device: on the CPU the addon's path in force (every other path gives its bits:
 * test/engine/arithmetic.test.ts and runtime.test.ts), a device's graphs elsewhere.
 */
type Path = { name: string; options: Partial<EngineOptions> };
const paths = (device: Device): Path[] => [{ name: device === 'cpu' ? `, ${kernelInfo().isa}` : '', options: {} }];

for (const [preset, device, { name, options }] of (['tiny', 'tiny-4b'] as FixturePreset[]).flatMap((p) =>
  devices.flatMap((d) => paths(d).map((path) => [p, d, path] as const)),
)) {
  describe(`golden logits from Hugging Face transformers: ${preset}, --device ${device}${name}`, () => {
    it('matches every position to 1e-4 of the largest logit, with the same argmax and log-sum-exp', async () => {
      const golden = JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/golden', `${preset}.json`), 'utf8')) as Golden;
      const dir = fixtureCheckpoint(preset);
      // The fixture is made with the seed the golden file was made with; a changed generator needs new golden files.
      expect(FIXTURE_SEED).toBe(7);
      expect(checkpointDigest(dir), 'tiny checkpoint bytes changed: regenerate test/golden (see make_golden.py)').toBe(
        golden.checkpoint_sha256,
      );
      const checkpoint = Checkpoint.open(dir);
      const engine = await Gemma3Engine.create({ checkpoint, precision: 'float32', device, ...options });
      const logits = await engine.logits(golden.ids, { chunk: 7 });
      const V = checkpoint.config.vocab_size;
      let diff = 0;
      golden.ids.forEach((_, t) => {
        golden.vocab_ids.forEach(
          (id, k) => (diff = Math.max(diff, Math.abs(logits[t * V + id]! - golden.logits[t]![k]!))),
        );
        const row = logits.subarray(t * V, (t + 1) * V);
        let best = 0;
        for (let i = 1; i < V; i++) if (row[i]! > row[best]!) best = i;
        expect(best).toBe(golden.argmax[t]);
        const max = row[best]!;
        let sum = 0;
        for (let i = 0; i < V; i++) sum += Math.exp(row[i]! - max);
        expect(Math.abs(max + Math.log(sum) - golden.logsumexp[t]!)).toBeLessThan(1e-4 * golden.max_abs_logit);
      });
      expect(diff).toBeLessThan(1e-4 * golden.max_abs_logit);
      await engine.close();
      checkpoint.close();
    });
  });
}
