// Manual cross-check with Hugging Face (not part of `vitest run`: CI needs no Python). Run from the repo root:
//   node --import tsx test/service/weights/hf-check/make.ts .scratch/hf-check
//   python3 -m venv /tmp/hf && /tmp/hf/bin/pip install torch transformers peft
//   cd .scratch/hf-check && /tmp/hf/bin/python ../../test/service/weights/hf-check/check.py
// make.ts writes tiny and tiny-4b checkpoints, a patch of each kind exported with `export-patched` (one with
// --peft), and this engine's last-position logits of the edited weights (ours.json); check.py loads the exported
// folders with transformers and the adapters with PEFT and prints the largest logit differences.
import path from 'node:path';
import { rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { Checkpoint, Gemma3Engine, makeTinyCheckpoint, type WeightSource } from '../../../../engine/index.ts';
import { WeightStore, writeEpisodePatch } from '../../../../service/weights/index.ts';

const root = path.resolve(process.argv[2] ?? '.scratch/hf-check');
const IDS = [2, 105, 2364, 107, 3689, 563, 506, 5279, 236881, 106, 107, 105, 4368, 107];
const results: Record<string, unknown> = { ids: IDS };
for (const preset of ['tiny', 'tiny-4b'] as const) {
  const dir = makeTinyCheckpoint({ out: path.join(root, preset), preset, seed: 7 });
  const ck = Checkpoint.open(dir);
  const p = ck.config.tensor_prefix;
  const head = preset === 'tiny' ? 'lm_head.weight' : 'language_model.lm_head.weight';
  const store = new WeightStore(ck);
  const engine = await Gemma3Engine.create({ checkpoint: ck, source: store.pristineSource });
  const V = ck.config.vocab_size;
  const last = async (src?: WeightSource) =>
    Array.from((await engine.logits(IDS, src ? { weights: src } : {})).subarray((IDS.length - 1) * V, IDS.length * V));
  const full = store.createEpisode('full');
  full.write({ op: 'scale', tensor: head, slice: [[0, 8192]], factor: 1.5 });
  full.write({
    op: 'low_rank_add',
    tensor: `${p}layers.1.mlp.down_proj.weight`,
    slice: [[null, null, 2]],
    alpha: 0.5,
    u: Array.from({ length: 32 }, (_, i) => [Math.sin(i)]),
    v: Array.from({ length: ck.info(`${p}layers.1.mlp.down_proj.weight`).shape[1]! }, (_, j) => [Math.cos(j)]),
  });
  full.write({ op: 'fill', tensor: `${p}layers.2.post_attention_layernorm.weight`, value: 0.5 });
  rmSync(path.join(root, `${preset}-patch`), { recursive: true, force: true });
  rmSync(path.join(root, `${preset}-out`), { recursive: true, force: true });
  const fullId = writeEpisodePatch(full, path.join(root, `${preset}-patch`)).digest;
  execFileSync(process.execPath, [
    'bin/iwibench.js',
    'export-patched',
    '--model-dir',
    dir,
    '--patch',
    path.join(root, `${preset}-patch`),
    '--patch-id',
    fullId,
    '--out',
    path.join(root, `${preset}-out`),
  ]);
  const lora = store.createEpisode('lora');
  const q = `${p}layers.3.self_attn.q_proj.weight`,
    up = `${p}layers.0.mlp.up_proj.weight`;
  const rnd = (n: number, r: number, s: number) =>
    Array.from({ length: n }, (_, i) => Array.from({ length: r }, (_, k) => Math.sin(i * 1.3 + k * 0.7 + s) * 0.3));
  lora.write({
    op: 'low_rank_add',
    tensor: q,
    slice: [
      [0, 40],
      [null, null, -1],
    ],
    alpha: 2,
    u: rnd(40, 3, 1),
    v: rnd(ck.info(q).shape[1]!, 3, 2),
  });
  lora.write({
    op: 'low_rank_add',
    tensor: up,
    alpha: 1,
    u: rnd(ck.info(up).shape[0]!, 2, 3),
    v: rnd(ck.info(up).shape[1]!, 2, 4),
  });
  rmSync(path.join(root, `${preset}-lpatch`), { recursive: true, force: true });
  rmSync(path.join(root, `${preset}-lout`), { recursive: true, force: true });
  const loraId = writeEpisodePatch(lora, path.join(root, `${preset}-lpatch`)).digest;
  execFileSync(process.execPath, [
    'bin/iwibench.js',
    'export-patched',
    '--model-dir',
    dir,
    '--patch',
    path.join(root, `${preset}-lpatch`),
    '--patch-id',
    loraId,
    '--out',
    path.join(root, `${preset}-lout`),
    '--peft',
  ]);
  results[preset] = { base: await last(), full: await last(full.source), lora: await last(lora.source) };
  await engine.close();
}
writeFileSync(path.join(root, 'ours.json'), JSON.stringify(results));
