// export-patched: a fresh `npx iwibench export-patched` process writes a checkpoint folder whose only differing
// bytes are the touched tensors', which loads like the original, and whose logits (initializer mode, fixed weights)
// equal the in-memory edited weights' (input mode); and the PEFT LoRA adapter of low_rank_add-only patches.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bf16ToF32, Checkpoint, Gemma3Engine, SafetensorsFile } from '../../../engine/index.ts';
import { exportPatched } from '../../../service/weights/export.ts';
import { writeEpisodePatch, type PatchRef } from '../../../service/weights/patch.ts';
import { WeightStore } from '../../../service/weights/store.ts';
import { tinyFixture, type TinyFixture, errorOf } from './fixtures.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const P = 'language_model.model.';
const IDS = [2, 105, 2364, 107, 3689, 563, 506, 5279, 236881, 106, 107, 105, 4368, 107];

let tiny4b: TinyFixture;
let tiny: TinyFixture;
let work: string;

beforeAll(() => {
  tiny4b = tinyFixture('tiny-4b');
  tiny = tinyFixture('tiny');
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-export-'));
});
afterAll(() => {
  tiny4b.cleanup();
  tiny.cleanup();
  rmSync(work, { recursive: true, force: true });
});

/** How every use names a patch: its folder and the id writing it returned. */
const ref = (written: { dir: string; digest: string }): PatchRef => ({ dir: written.dir, id: written.digest });

describe('export-patched', () => {
  it('writes a checkpoint that differs only in the touched tensors and runs like the in-memory edit', async () => {
    const store = new WeightStore(tiny4b.checkpoint);
    const episode = store.createEpisode('x');
    episode.write({ op: 'scale', tensor: 'language_model.lm_head.weight', slice: [[0, 4096]], factor: 1.5 });
    episode.write({
      op: 'low_rank_add',
      tensor: `${P}layers.3.mlp.up_proj.weight`,
      slice: [[null, null, 2]],
      alpha: 2,
      u: Array.from({ length: 96 }, (_, i) => [Math.sin(i)]),
      v: Array.from({ length: 64 }, (_, j) => [Math.cos(j)]),
    });
    episode.write({ op: 'fill', tensor: `${P}layers.5.self_attn.k_norm.weight`, value: 0.5 });
    const patch = ref(writeEpisodePatch(episode, path.join(work, 'patch-4b')));
    const out = path.join(work, 'exported-4b');
    const cli = (id: string) =>
      execFileSync(
        process.execPath,
        [
          'bin/iwibench.js',
          'export-patched',
          '--model-dir',
          tiny4b.dir,
          '--patch',
          patch.dir,
          '--patch-id',
          id,
          '--out',
          out,
        ],
        { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' },
      );
    expect(() => cli('0'.repeat(64))).toThrow(/PATCH_ID_MISMATCH|holds patch [0-9a-f]{64}.*not the requested 0{64}/);
    expect(existsSync(out)).toBe(false);
    // The summary: the folder, the three touched tensors in the one shard that holds them, the patch.
    const [title, wrote, figures, end] = cli(patch.id).split('\n');
    expect([title, wrote, end]).toEqual([
      'export-patched:',
      `  wrote ${out} (the patched checkpoint: 3 tensors rewritten in 1 shard)`,
      '',
    ]);
    expect(figures).toMatch(new RegExp(`^  patch ${patch.id}, [\\d.]+ s$`));

    // Every file is there; only shard 1 differs, and only inside the touched tensors.
    const files = readdirSync(tiny4b.dir).sort();
    expect(readdirSync(out).sort()).toEqual([...files, 'iwibench-patch.json', 'iwibench-patch-provenance.json'].sort());
    for (const file of files.filter((f) => f !== 'model-00001-of-00002.safetensors')) {
      expect(readFileSync(path.join(out, file)).equals(readFileSync(path.join(tiny4b.dir, file))), file).toBe(true);
    }
    const original = readFileSync(path.join(tiny4b.dir, 'model-00001-of-00002.safetensors'));
    const patched = readFileSync(path.join(out, 'model-00001-of-00002.safetensors'));
    expect(patched.length).toBe(original.length);
    const touched = episode.touchedTensors().map((name) => tiny4b.checkpoint.info(name));
    const inTouched = (i: number) => touched.some((t) => t.offset <= i && i < t.offset + t.byteLength);
    let stray = -1;
    for (let i = 0; i < original.length && stray < 0; i++) if (original[i] !== patched[i] && !inTouched(i)) stray = i;
    expect(stray).toBe(-1);
    const reopened = Checkpoint.open(out);
    for (const t of touched) {
      const live = episode.bits(t.name);
      expect(
        Buffer.from(reopened.readBytes(t.name)).equals(Buffer.from(live.buffer, live.byteOffset, live.byteLength)),
        t.name,
      ).toBe(true);
    }

    // The two runtime modes: fixed external initializers from the exported files vs the editable inputs.
    const fixed = await Gemma3Engine.create({ checkpoint: reopened });
    const live = await Gemma3Engine.create({ checkpoint: tiny4b.checkpoint, source: store.pristineSource });
    try {
      const a = await fixed.logits(IDS);
      const b = await live.logits(IDS, { weights: episode.source });
      const base = await live.logits(IDS);
      const V = reopened.config.vocab_size;
      let maxDiff = 0,
        maxEdit = 0;
      for (let i = 0; i < a.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(a[i]! - b[i]!));
        maxEdit = Math.max(maxEdit, Math.abs(b[i]! - base[i]!));
      }
      expect(maxEdit).toBeGreaterThan(0.1); // the edit matters…
      expect(maxDiff).toBeLessThan(1e-4); // …and both modes agree at float32 rounding level
      for (let t = 0; t < IDS.length; t++) {
        const argmax = (x: Float32Array) =>
          x.subarray(t * V, (t + 1) * V).reduce((best, v, i, row) => (v > row[best]! ? i : best), 0);
        expect(argmax(a)).toBe(argmax(b));
      }
    } finally {
      await fixed.close();
      await live.close();
      reopened.close();
    }
    expect(errorOf(() => exportPatched({ checkpoint: tiny4b.checkpoint, patch, outDir: out })).code).toBe(
      'PATCH_EXISTS',
    );
  });

  it('writes a PEFT LoRA adapter equal to the low-rank edits up to BF16 rounding', () => {
    const store = new WeightStore(tiny.checkpoint);
    const episode = store.createEpisode('lora');
    const DOWN = 'model.layers.1.mlp.down_proj.weight'; // [64, 128]
    const Q = 'model.layers.4.self_attn.q_proj.weight'; // [64, 64]
    const u = (n: number, r: number, s: number) =>
      Array.from({ length: n }, (_, i) =>
        Array.from({ length: r }, (_, k) => Math.fround(Math.sin(i * 7 + k * 3 + s) * 0.1)),
      );
    episode.write({
      op: 'low_rank_add',
      tensor: DOWN,
      slice: [
        [10, 30, 2],
        [null, null, -1],
      ],
      alpha: 0.5,
      u: u(10, 2, 1),
      v: u(128, 2, 2),
    });
    episode.write({
      op: 'low_rank_add',
      tensor: DOWN,
      slice: [
        [0, 64],
        [0, 8],
      ],
      alpha: -1,
      u: u(64, 3, 3),
      v: u(8, 3, 4),
    });
    episode.write({ op: 'low_rank_add', tensor: Q, slice: [[-4, null]], alpha: 2, u: u(4, 1, 5), v: u(64, 1, 6) });
    const patch = ref(writeEpisodePatch(episode, path.join(work, 'patch-lora')));
    const result = exportPatched({
      checkpoint: tiny.checkpoint,
      patch,
      outDir: path.join(work, 'exported-lora'),
      peft: true,
    });
    expect(result.peft).toEqual({
      dir: path.join(work, 'exported-lora', 'peft'),
      rank: 5,
      modules: ['model.layers.1.mlp.down_proj', 'model.layers.4.self_attn.q_proj'],
    });
    expect(existsSync(path.join(work, 'exported-lora', 'adapter_config.json'))).toBe(false); // the folder must still load as a full model

    const config = JSON.parse(readFileSync(path.join(result.peft!.dir, 'adapter_config.json'), 'utf8'));
    expect(config).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: 'iwibench/tiny',
      r: 5,
      lora_alpha: 5,
      target_modules: result.peft!.modules,
    });
    const adapter = SafetensorsFile.open(path.join(result.peft!.dir, 'adapter_model.safetensors'));
    expect([...adapter.tensors.values()].map((t) => [t.name, t.shape])).toEqual([
      ['base_model.model.model.layers.1.mlp.down_proj.lora_A.weight', [5, 128]],
      ['base_model.model.model.layers.1.mlp.down_proj.lora_B.weight', [64, 5]],
      ['base_model.model.model.layers.4.self_attn.q_proj.lora_A.weight', [5, 64]],
      ['base_model.model.model.layers.4.self_attn.q_proj.lora_B.weight', [64, 5]],
    ]);
    for (const [name, module, [out, inp]] of [
      [DOWN, 'model.layers.1.mlp.down_proj', [64, 128]],
      [Q, 'model.layers.4.self_attn.q_proj', [64, 64]],
    ] as const) {
      const f32 = (key: string) => {
        const bytes = adapter.readBytes(`base_model.model.${module}.${key}.weight`);
        return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
      };
      const [A, B] = [f32('lora_A'), f32('lora_B')];
      const W = bf16ToF32(store.pristineBits(name));
      const edited = bf16ToF32(episode.bits(name));
      for (let o = 0; o < out; o++) {
        for (let i = 0; i < inp; i++) {
          let delta = 0,
            size = Math.abs(W[o * inp + i]!);
          for (let k = 0; k < 5; k++) {
            delta += B[o * 5 + k]! * A[k * inp + i]!;
            size += Math.abs(B[o * 5 + k]! * A[k * inp + i]!);
          }
          // The patch rounds after each op (≤ 2 here), the adapter never: each rounding moves a value by at most
          // half a BF16 ulp, 2^-8 of a magnitude that `size` bounds for every intermediate value.
          expect(Math.abs(W[o * inp + i]! + delta - edited[o * inp + i]!), `${name}[${o}, ${i}]`).toBeLessThanOrEqual(
            2 * 2 ** -8 * size + 1e-12,
          );
        }
      }
    }
    adapter.close();
  });

  it('names 4B adapter modules as transformers ≥ 4.52 does and refuses patches LoRA cannot hold', () => {
    const store = new WeightStore(tiny4b.checkpoint);
    const lowRank = store.createEpisode('lr');
    lowRank.write({
      op: 'low_rank_add',
      tensor: `${P}layers.0.mlp.down_proj.weight`,
      slice: [
        [0, 2],
        [0, 2],
      ],
      alpha: 1,
      u: [[1], [1]],
      v: [[1], [1]],
    });
    const ok = exportPatched({
      checkpoint: tiny4b.checkpoint,
      patch: ref(writeEpisodePatch(lowRank, path.join(work, 'p-lr'))),
      outDir: path.join(work, 'o-lr'),
      peft: true,
    });
    expect(ok.peft!.modules).toEqual(['model.language_model.layers.0.mlp.down_proj']);

    const fill = store.createEpisode('fill');
    fill.write({ op: 'fill', tensor: `${P}layers.0.mlp.down_proj.weight`, slice: [0, 0], value: 1 });
    const outFill = path.join(work, 'o-fill');
    const refused = errorOf(() =>
      exportPatched({
        checkpoint: tiny4b.checkpoint,
        patch: ref(writeEpisodePatch(fill, path.join(work, 'p-fill'))),
        outDir: outFill,
        peft: true,
      }),
    );
    expect(refused).toEqual({
      code: 'PEFT_UNSUPPORTED',
      message: 'op 0 is fill; a PEFT LoRA adapter can only hold low_rank_add ops',
    });
    expect(existsSync(outFill)).toBe(false);

    const embed = store.createEpisode('embed');
    embed.write({
      op: 'low_rank_add',
      tensor: 'language_model.lm_head.weight',
      slice: [
        [0, 2],
        [0, 2],
      ],
      alpha: 1,
      u: [[1], [1]],
      v: [[1], [1]],
    });
    const refusedEmbed = errorOf(() =>
      exportPatched({
        checkpoint: tiny4b.checkpoint,
        patch: ref(writeEpisodePatch(embed, path.join(work, 'p-embed'))),
        outDir: path.join(work, 'o-embed'),
        peft: true,
      }),
    );
    expect(refusedEmbed.code).toBe('PEFT_UNSUPPORTED');
    expect(refusedEmbed.message).toContain('tied embedding');
    expect(readdirSync(work).filter((f) => f.includes('.partial'))).toEqual([]);
  });
});
