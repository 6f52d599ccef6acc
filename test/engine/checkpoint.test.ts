import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { writeSafetensors } from '../../engine/safetensors.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

let work: string;
beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-ckpt-'));
});

/** A copy of the tiny checkpoint whose single safetensors file is rewritten by `edit`. */
function variant(
  name: string,
  edit: (tensors: { name: string; shape: number[]; data: Uint16Array }[]) => void,
): string {
  const dir = path.join(work, name);
  cpSync(fixtureCheckpoint('tiny'), dir, { recursive: true });
  const ck = Checkpoint.open(dir);
  const tensors = [...ck.tensors.values()].map((info) => ({
    name: info.name,
    shape: info.shape,
    data: new Uint16Array(ck.readBytes(info.name).buffer, 0, info.byteLength / 2),
  }));
  ck.close();
  edit(tensors);
  writeSafetensors(
    path.join(dir, 'model.safetensors'),
    tensors.map((t) => ({ ...t, dtype: 'BF16' as const })),
  );
  return dir;
}

describe('Checkpoint', () => {
  it('opens the 1B layout and decodes BF16 exactly', () => {
    const ck = Checkpoint.open(fixtureCheckpoint('tiny'));
    expect(ck.config.tensor_prefix).toBe('model.');
    expect(ck.tensors.size).toBe(2 + 6 * 13);
    const norm = ck.readF32('model.norm.weight');
    const bits = new Uint16Array(ck.readBytes('model.norm.weight').buffer, 0, norm.length);
    expect(new Uint32Array(norm.buffer)[0]).toBe((bits[0]! << 16) >>> 0);
    ck.close();
  });

  it('opens the 4B layout: sharded with an index, vision tensors listed, text under language_model.model.*', () => {
    const ck = Checkpoint.open(fixtureCheckpoint('tiny-4b'));
    expect(ck.config.architecture).toBe('Gemma3ForConditionalGeneration');
    expect(ck.config.vocab_size).toBe(262208); // from the defaults: the sparse text_config does not say
    expect(ck.info('language_model.model.embed_tokens.weight').shape).toEqual([262208, 64]);
    expect([...ck.tensors.keys()].some((n) => n.startsWith('vision_tower.'))).toBe(true);
    expect(new Set([...ck.tensors.values()].map((i) => path.basename(i.file))).size).toBe(2);
    ck.close();
  });

  it('resolves the Hugging Face cache layout with a pinned revision', () => {
    const revision = 'dcc83ea841ab6100d6b47a070329e1ba4cf78752';
    const repo = path.join(work, 'hub', 'models--google--gemma-3-1b-it');
    mkdirSync(path.join(repo, 'snapshots'), { recursive: true });
    cpSync(fixtureCheckpoint('tiny'), path.join(repo, 'snapshots', revision), { recursive: true });
    const ck = Checkpoint.open({ cacheDir: path.join(work, 'hub'), modelId: 'google/gemma-3-1b-it', revision });
    expect(ck.revision).toBe(revision);
    expect(ck.modelId).toBe('google/gemma-3-1b-it');
    ck.close();
    expect(() =>
      Checkpoint.open({ cacheDir: path.join(work, 'hub'), modelId: 'google/gemma-3-1b-it', revision: 'abc' }),
    ).toThrow(/revision abc is not in .*snapshots \(have: dcc83ea8/);
    // A repo folder names its id, so the pinned revision is found without being given.
    const byRepo = Checkpoint.open({ modelDir: repo });
    expect([byRepo.modelId, byRepo.revision]).toEqual(['google/gemma-3-1b-it', revision]);
    byRepo.close();
  });

  it('names a missing tensor', () => {
    const dir = variant('missing', (ts) =>
      ts.splice(
        ts.findIndex((t) => t.name === 'model.layers.3.mlp.up_proj.weight'),
        1,
      ),
    );
    expect(() => Checkpoint.open(dir)).toThrow(/missing tensor "model\.layers\.3\.mlp\.up_proj\.weight"/);
  });

  it('names a tensor whose shape disagrees with config.json', () => {
    const dir = variant('shape', (ts) => {
      const t = ts.find((x) => x.name === 'model.layers.0.self_attn.k_proj.weight')!;
      t.shape = [t.shape[1]!, t.shape[0]!];
    });
    expect(() => Checkpoint.open(dir)).toThrow(
      /tensor "model\.layers\.0\.self_attn\.k_proj\.weight" in model\.safetensors has shape \[64,16\], config\.json implies \[16,64\]/,
    );
  });

  it('refuses a truncated shard, naming the file', () => {
    const dir = path.join(work, 'truncated');
    cpSync(fixtureCheckpoint('tiny'), dir, { recursive: true });
    const file = path.join(dir, 'model.safetensors');
    writeFileSync(file, readFileSync(file).subarray(0, 1_000_000));
    expect(() => Checkpoint.open(dir)).toThrow(
      /malformed safetensors file model\.safetensors \(tensor ".+"\): data_offsets end \d+ is outside/,
    );
  });

  it('refuses an index that points at the wrong shard, and a missing shard', () => {
    const dir = path.join(work, 'index');
    cpSync(fixtureCheckpoint('tiny-4b'), dir, { recursive: true });
    const indexFile = path.join(dir, 'model.safetensors.index.json');
    const index = JSON.parse(readFileSync(indexFile, 'utf8'));
    index.weight_map['language_model.model.norm.weight'] = 'model-00002-of-00002.safetensors';
    writeFileSync(indexFile, JSON.stringify(index));
    expect(() => Checkpoint.open(dir)).toThrow(
      /index maps tensor "language_model\.model\.norm\.weight" to model-00002-of-00002\.safetensors, which does not hold it/,
    );
    rmSync(path.join(dir, 'model-00002-of-00002.safetensors'));
    expect(() => Checkpoint.open(dir)).toThrow(/shard .*model-00002-of-00002\.safetensors is missing/);
  });

  it('refuses a folder without config.json or weights', () => {
    const dir = path.join(work, 'empty');
    mkdirSync(dir);
    expect(() => Checkpoint.open(dir)).toThrow(/config\.json is missing/);
    writeFileSync(path.join(dir, 'config.json'), readFileSync(path.join(fixtureCheckpoint('tiny'), 'config.json')));
    expect(() => Checkpoint.open(dir)).toThrow(/has neither model\.safetensors nor model\.safetensors\.index\.json/);
  });
});
