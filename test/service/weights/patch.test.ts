// Patches: record → write → apply in a fresh process → the same bytes, bit for bit; the patch format on disk; the
// patch id bound to the files (every tampered file refused with PATCH_ID_MISMATCH; the same edits give one
// id in any episode); and every refusal of a patch under its own id: wrong base (id, revision, weights), edited
// digests, stats or ops, truncated or edited payloads, unknown ops and format versions.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
  statSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bf16ToF32, Checkpoint, SafetensorsFile, writeSafetensors } from '../../../engine/index.ts';
import { isIwiError } from '../../../service/errors.ts';
import {
  applyPatch,
  bf16Sha256,
  patchDigest,
  writeEpisodePatch,
  PATCH_FORMAT,
  type PatchJson,
  type Provenance,
} from '../../../service/weights/patch.ts';
import { WeightStore, type EpisodeWeights } from '../../../service/weights/store.ts';
import { tinyFixture, type TinyFixture } from './fixtures.ts';

const P = 'language_model.model.';
const DOWN = `${P}layers.2.mlp.down_proj.weight`; // [64, 192]
const Q = `${P}layers.0.self_attn.q_proj.weight`; // [64, 64]
const NORM = `${P}layers.4.post_feedforward_layernorm.weight`; // [64]
const EMBED = `${P}embed_tokens.weight`;
const CHILD = path.join(import.meta.dirname, 'apply-patch-child.ts');
const ROOT = path.resolve(import.meta.dirname, '../../..');

let fixture: TinyFixture;
let store: WeightStore;
let episode: EpisodeWeights;
let work: string;
let patchDir: string;
let lightDir: string; // the refusal tests' patch: no embedding, so each replay is quick
let lightId: string;

/** The ops of the round-trip episode: all five, strided and negative slices, a handle, the tied-head alias, a revert. */
function record(e: EpisodeWeights): void {
  e.write({
    op: 'scale',
    tensor: DOWN,
    slice: [
      [null, null, -3],
      [5, -5, 2],
    ],
    factor: -1.75,
  });
  const handle = e.read({ op: 'slice', tensor: Q, slice: [[0, 40]] }) as { handle: { id: string } };
  e.write({ op: 'replace', tensor: Q, slice: [[-40, null]], values: { handle: handle.handle.id } });
  e.write({ op: 'fill', tensor: NORM, value: 0.3 });
  e.revert(2); // the fill is dropped from the log and from the weights
  e.write({
    op: 'low_rank_add',
    tensor: DOWN,
    slice: [
      [3, 40, 3],
      [null, null, -7],
    ],
    alpha: 0.125,
    u: Array.from({ length: 13 }, (_, i) => [i / 7, -1, 0.5]),
    v: Array.from({ length: 28 }, (_, j) => [1, j / 28, -j]),
  });
  e.write({
    op: 'copy',
    tensor: 'language_model.lm_head.weight',
    slice: [[100, 104]],
    source: { tensor: EMBED, slice: [[7, 3, -1]] },
  });
  e.write({ op: 'replace', tensor: NORM, slice: [[0, 3]], values: [1 + 2 ** -8, 2.5 * 2 ** -133, -7] });
}

beforeAll(() => {
  fixture = tinyFixture('tiny-4b');
  store = new WeightStore(fixture.checkpoint);
  episode = store.createEpisode('patch-test');
  record(episode);
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-patch-'));
  patchDir = writeEpisodePatch(episode, path.join(work, 'patch'), { createdBy: { episode: 'patch-test' } }).dir;
  const light = store.createEpisode('light');
  for (const op of episode.ops) if (op.tensor !== EMBED) light.apply(op);
  ({ dir: lightDir, digest: lightId } = writeEpisodePatch(light, path.join(work, 'light')));
});
afterAll(() => {
  fixture.cleanup();
  rmSync(work, { recursive: true, force: true });
});

let copies = 0;
/** A copy of the patch folder to tamper with. */
function copyPatch(edit?: (json: PatchJson) => void): string {
  const dir = path.join(work, `copy-${copies++}`);
  cpSync(lightDir, dir, { recursive: true });
  if (edit) {
    const json = JSON.parse(readFileSync(path.join(dir, 'patch.json'), 'utf8'));
    edit(json);
    writeFileSync(path.join(dir, 'patch.json'), JSON.stringify(json));
  }
  return dir;
}

/**
 * Why applying the patch in `dir` is refused. By default it is asked for under the id its files have now, so the
 * checks after the id's are reached: a crafted patch can always be submitted under its own id.
 */
function refusal(dir: string, checkpoint = fixture.checkpoint, id?: string): { code?: string; message: string } {
  try {
    applyPatch(checkpoint, dir, id ?? patchDigest(dir));
  } catch (error) {
    return {
      code: isIwiError(error) ? error.code : `not an IwiError: ${(error as Error).stack}`,
      message: (error as Error).message,
    };
  }
  return { message: 'applied' };
}

describe('patch files', () => {
  it('records base, ops with array references, digests, stats and provenance', () => {
    const json = JSON.parse(readFileSync(path.join(patchDir, 'patch.json'), 'utf8')) as PatchJson;
    const touched = [EMBED, Q, DOWN, NORM].sort();
    expect(json.format).toBe(PATCH_FORMAT);
    expect(json.base).toEqual({ model_id: 'iwibench/tiny-4b', revision: 'local' });
    expect(Object.keys(json.base_sha256).sort()).toEqual(touched);
    expect(json.base_sha256[Q]).toBe(bf16Sha256(store.pristineBits(Q)));
    expect(json.result_sha256[Q]).toBe(bf16Sha256(episode.bits(Q)));
    expect(json.ops.map((op) => op.op)).toEqual(['scale', 'replace', 'low_rank_add', 'copy', 'replace']);
    expect(json.ops[1]).toEqual({ op: 'replace', tensor: Q, slice: [[-40, null]], values: { array: 'op1.values' } });
    expect(json.ops[3]).toEqual({
      op: 'copy',
      tensor: EMBED,
      slice: [[100, 104]],
      source: { tensor: EMBED, slice: [[7, 3, -1]] },
    });
    expect(json).not.toHaveProperty('created_by'); // provenance is not part of the id
    const provenance = JSON.parse(readFileSync(path.join(patchDir, 'provenance.json'), 'utf8')) as Provenance;
    expect(provenance).toEqual({
      patch_id: patchDigest(patchDir),
      created_by: { package: 'iwibench-ts', package_version: '0.1.0', episode: 'patch-test' },
    });
    expect(readdirSync(patchDir).sort()).toEqual(['patch.json', 'patch.safetensors', 'provenance.json']);

    const stats = json.stats.tensors[NORM]!;
    expect(stats.changed).toBe(3);
    const before = bf16ToF32(store.pristineBits(NORM));
    const after = bf16ToF32(episode.bits(NORM));
    const delta = Math.hypot(...Array.from(after, (v, i) => v - before[i]!));
    expect(stats.delta_frobenius).toBeCloseTo(delta, 12);
    expect(stats.relative_delta).toBeCloseTo(delta / Math.hypot(...before), 12);
    expect(json.stats.changed_parameters).toBe(Object.values(json.stats.tensors).reduce((a, t) => a + t.changed, 0));

    const arrays = SafetensorsFile.open(path.join(patchDir, 'patch.safetensors'));
    expect([...arrays.tensors.values()].map((t) => [t.name, t.dtype, t.shape])).toEqual([
      ['op1.values', 'F32', [40, 64]],
      ['op2.u', 'F32', [13, 3]],
      ['op2.v', 'F32', [28, 3]],
      ['op4.values', 'F32', [3]],
    ]);
    arrays.close();
    expect(readdirSync(work).filter((f) => f.includes('.partial'))).toEqual([]);
  });

  it('applies in a fresh process to exactly the bytes of the live episode', () => {
    const out = path.join(work, 'applied.safetensors');
    execFileSync(process.execPath, ['--import', 'tsx', CHILD, fixture.dir, patchDir, patchDigest(patchDir), out], {
      cwd: ROOT,
      stdio: 'pipe',
    });
    const applied = SafetensorsFile.open(out);
    expect([...applied.tensors.keys()].sort()).toEqual([EMBED, Q, DOWN, NORM].sort());
    for (const name of applied.tensors.keys()) {
      const live = episode.bits(name);
      expect(
        Buffer.from(applied.readBytes(name)).equals(Buffer.from(live.buffer, live.byteOffset, live.byteLength)),
        name,
      ).toBe(true);
    }
    applied.close();
  });

  it('is deterministic: the same ops give the same patch id in any episode, whoever made them; another op gives another', () => {
    const again = store.createEpisode('again');
    record(again);
    const same = writeEpisodePatch(again, path.join(work, 'again'), {
      createdBy: { episode: 'again', editor: 'someone else' },
    });
    expect(same.digest).toBe(patchDigest(patchDir));
    expect(
      readFileSync(path.join(work, 'again', 'patch.json')).equals(readFileSync(path.join(patchDir, 'patch.json'))),
    ).toBe(true);
    expect(same.provenance.created_by.episode).toBe('again');
    again.write({ op: 'fill', tensor: NORM, slice: [63], value: 0 });
    expect(writeEpisodePatch(again, path.join(work, 'more'), { createdBy: { episode: 'patch-test' } }).digest).not.toBe(
      same.digest,
    );
  });

  it('refuses to overwrite a patch folder unless asked', () => {
    let error: unknown;
    try {
      writeEpisodePatch(episode, patchDir);
    } catch (e) {
      error = e;
    }
    expect(isIwiError(error, 'PATCH_EXISTS')).toBe(true);
    const dir = path.join(work, 'overwritten');
    writeEpisodePatch(store.createEpisode('empty'), dir);
    writeEpisodePatch(episode, dir, { overwrite: true, createdBy: { episode: 'patch-test' } });
    expect(patchDigest(dir)).toBe(patchDigest(patchDir));
  });

  it('applies an empty patch to no tensors', () => {
    const dir = writeEpisodePatch(store.createEpisode('noop'), path.join(work, 'noop')).dir;
    expect(applyPatch(fixture.checkpoint, dir, patchDigest(dir)).size).toBe(0);
  });
});

describe('refusals', () => {
  it('a different base model, revision or base weights', () => {
    expect(refusal(copyPatch((j) => (j.base.model_id = 'google/gemma-3-4b-it')))).toEqual({
      code: 'PATCH_BASE_MISMATCH',
      message: 'patch was made for google/gemma-3-4b-it@local, the checkpoint is iwibench/tiny-4b@local',
    });
    const pinned = Checkpoint.open({ modelDir: fixture.dir, revision: '093f9f388b31de276ce2de164bdc2081324b9767' });
    expect(refusal(lightDir, pinned).code).toBe('PATCH_BASE_MISMATCH');
    pinned.close();
    // Same name and revision, one BF16 value of a touched tensor changed on disk.
    const otherDir = path.join(work, 'other-weights');
    cpSync(fixture.dir, otherDir, { recursive: true });
    const shard = path.join(otherDir, path.basename(fixture.checkpoint.info(DOWN).file));
    const bytes = readFileSync(shard);
    bytes[fixture.checkpoint.info(DOWN).offset + 101]! ^= 0x01;
    writeFileSync(shard, bytes);
    const other = Checkpoint.open(otherDir);
    try {
      const r = refusal(lightDir, other);
      expect(r.code).toBe('PATCH_BASE_MISMATCH');
      expect(r.message).toMatch(
        new RegExp(`^base tensor "${DOWN}" has SHA-256 [0-9a-f]{64}, the patch expects [0-9a-f]{64}`),
      );
    } finally {
      other.close();
    }
  });

  it('an edited result digest, op or payload does not reproduce its digests', () => {
    const r = refusal(copyPatch((j) => (j.result_sha256[NORM] = '0'.repeat(64))));
    expect(r.code).toBe('PATCH_DIGEST_MISMATCH');
    expect(r.message).toContain(`replaying the patch gives "${NORM}"`);
    expect(refusal(copyPatch((j) => ((j.ops[0] as { factor: number }).factor = -1.5))).code).toBe(
      'PATCH_DIGEST_MISMATCH',
    );
    // Flip the sign of the first float of op3.values (1 + 2^-8) in the payload.
    const dir = copyPatch();
    const file = path.join(dir, 'patch.safetensors');
    const arrays = SafetensorsFile.open(file);
    const offset = arrays.info('op3.values').offset;
    arrays.close();
    const bytes = readFileSync(file);
    bytes[offset + 3]! ^= 0x80;
    writeFileSync(file, bytes);
    expect(refusal(dir).code).toBe('PATCH_DIGEST_MISMATCH');
  });

  it('a truncated, non-finite or unreferenced payload', () => {
    const truncated = copyPatch();
    const file = path.join(truncated, 'patch.safetensors');
    truncateSync(file, statSync(file).size - 5);
    const r = refusal(truncated);
    expect(r.code).toBe('PATCH_INVALID');
    expect(r.message).toContain('truncated');

    const nan = copyPatch();
    const arrays = SafetensorsFile.open(path.join(nan, 'patch.safetensors'));
    const tensors = [...arrays.tensors.keys()].map((name) => {
      const data = new Float32Array(Uint8Array.from(arrays.readBytes(name)).buffer);
      if (name === 'op2.u') data[4] = NaN;
      return { name, dtype: 'F32' as const, shape: arrays.info(name).shape, data };
    });
    arrays.close();
    writeSafetensors(path.join(nan, 'patch.safetensors'), tensors);
    expect(refusal(nan)).toEqual({
      code: 'PATCH_INVALID',
      message: 'patch.safetensors array "op2.u": element [1,1] is NaN',
    });

    const extra = copyPatch();
    writeSafetensors(path.join(extra, 'patch.safetensors'), [
      ...tensors.map((t) => (t.name === 'op2.u' ? { ...t, data: new Float32Array(t.data.length) } : t)),
      { name: 'stray', dtype: 'F32', shape: [1], data: new Float32Array(1) },
    ]);
    expect(refusal(extra).message).toContain('holds array "stray", which no op refers to');
    rmSync(path.join(extra, 'patch.safetensors'));
    expect(refusal(extra).message).toContain('has no patch.safetensors');
  });

  it('an unknown op, format version, or malformed patch.json', () => {
    const unknownOp = refusal(copyPatch((j) => (j.ops[2]!.op = 'rotate')));
    expect(unknownOp.code).toBe('PATCH_INVALID');
    expect(unknownOp.message).toContain('op 2: unknown write op "rotate"');
    expect(refusal(copyPatch((j) => ((j as { format: string }).format = 'iwibench-patch/3')))).toEqual({
      code: 'PATCH_INVALID',
      message: `${path.join(work, `copy-${copies - 1}`, 'patch.json')} has format "iwibench-patch/3"; this build reads "iwibench-patch/2" only`,
    });
    // Format 1: refused with what to do about it.
    const old = refusal(
      copyPatch((j) =>
        Object.assign(j, {
          format: 'iwibench-patch/1',
          created_by: { package: 'iwibench-ts', package_version: '0.1.0' },
        }),
      ),
    );
    expect(old.code).toBe('PATCH_INVALID');
    expect(old.message).toMatch(
      /is an iwibench-patch\/1 patch, which this build no longer reads .*write it again as iwibench-patch\/2/,
    );
    expect(refusal(copyPatch((j) => delete (j as Partial<PatchJson>).stats)).message).toContain(
      "must have required property 'stats'",
    );
    expect(
      refusal(copyPatch((j) => j.ops.push({ op: 'replace', tensor: Q, values: { array: 'op9.values' } }))).message,
    ).toContain(
      'op 4: replace on "language_model.model.layers.0.self_attn.q_proj.weight" [:]: values must be {"array": key} naming an array in patch.safetensors',
    );
    expect(refusal(copyPatch((j) => (j.ops[0]!.slice = [[0, 999]]))).message).toContain(
      'op 0: slice [0,999] for dimension 0 (size 64) of "language_model.model.layers.2.mlp.down_proj.weight": stop 999 is outside -64…64',
    );
    expect(
      refusal(copyPatch((j) => (j.ops[0]!.tensor = 'vision_tower.vision_model.post_layernorm.weight'))).message,
    ).toContain('(WEIGHT_NOT_WRITABLE)');
    const broken = copyPatch();
    writeFileSync(path.join(broken, 'patch.json'), '{"format": "iwibench-patch/1", ');
    expect(refusal(broken).message).toContain('is not valid JSON');
    rmSync(path.join(broken, 'patch.json'));
    expect(refusal(broken).message).toContain('has no patch.json');
  });

  it('digest lists or stats that do not match the ops', () => {
    expect(refusal(copyPatch((j) => (j.base_sha256[`${P}norm.weight`] = '0'.repeat(64)))).message).toContain(
      'patch.json base_sha256 lists',
    );
    expect(refusal(copyPatch((j) => delete j.result_sha256[Q])).message).toContain('patch.json result_sha256 lists');
    const stats = refusal(copyPatch((j) => (j.stats.tensors[Q]!.changed += 1)));
    expect(stats.code).toBe('PATCH_INVALID');
    expect(stats.message).toContain(`patch.json stats of "${Q}"`);
    expect(refusal(copyPatch((j) => (j.stats.changed_parameters += 1))).message).toContain('stats.changed_parameters');
  });

  it('refuses in a fresh process too, with the code on stdout', () => {
    const dir = copyPatch((j) => (j.result_sha256[DOWN] = 'f'.repeat(64)));
    const child = (id: string) =>
      spawnSync(
        process.execPath,
        ['--import', 'tsx', CHILD, fixture.dir, dir, id, path.join(work, 'never.safetensors')],
        { cwd: ROOT, encoding: 'utf8' },
      );
    const own = child(patchDigest(dir));
    expect(own.status).toBe(3);
    expect(JSON.parse(own.stdout).code).toBe('PATCH_DIGEST_MISMATCH');
    const asLight = child(lightId); // what it was copied from
    expect(asLight.status).toBe(3);
    expect(JSON.parse(asLight.stdout).code).toBe('PATCH_ID_MISMATCH');
    expect(existsSync(path.join(work, 'never.safetensors'))).toBe(false);
  });
});

describe('patch identity: a patch is asked for by id, and a folder holding anything else is refused', () => {
  /** The refusal of `dir` asked for as the light patch, and that the message names both ids. */
  function asLight(dir: string): string | undefined {
    const r = refusal(dir, fixture.checkpoint, lightId);
    if (r.code === 'PATCH_ID_MISMATCH') {
      expect(r.message).toContain(`holds patch ${patchDigest(dir)}`);
      expect(r.message).toContain(`not the requested ${lightId}`);
    }
    return r.code;
  }

  it('serves the folder under its own id, and only that one', () => {
    expect([...applyPatch(fixture.checkpoint, lightDir, lightId).keys()].sort()).toEqual([DOWN, Q, NORM].sort());
    expect(refusal(lightDir, fixture.checkpoint, patchDigest(patchDir)).code).toBe('PATCH_ID_MISMATCH');
    expect(refusal(lightDir, fixture.checkpoint, 'not an id').code).toBe('PATCH_ID_MISMATCH');
  });

  it("another patch's folder copied over it", () => {
    const dir = copyPatch();
    cpSync(patchDir, dir, { recursive: true, force: true });
    expect(refusal(dir).message).toBe('applied'); // a valid patch in its own right…
    expect(asLight(dir)).toBe('PATCH_ID_MISMATCH'); // …but not the one asked for
  });

  it('8 bytes appended to patch.safetensors', () => {
    const dir = copyPatch();
    const file = path.join(dir, 'patch.safetensors');
    writeFileSync(file, Buffer.concat([readFileSync(file), Buffer.alloc(8)]));
    expect(asLight(dir)).toBe('PATCH_ID_MISMATCH');
  });

  it('a fill value changed by 1e-7, which rounds to the same BF16 result', () => {
    const filled = store.createEpisode('filled');
    filled.write({ op: 'fill', tensor: NORM, value: 0.3 });
    const original = writeEpisodePatch(filled, path.join(work, 'filled'));
    const dir = path.join(work, 'filled-edited');
    cpSync(original.dir, dir, { recursive: true });
    const json = readFileSync(path.join(dir, 'patch.json'), 'utf8');
    writeFileSync(path.join(dir, 'patch.json'), json.replace('"value": 0.3', '"value": 0.3000001'));
    expect(readFileSync(path.join(dir, 'patch.json'), 'utf8')).not.toBe(json);
    expect(refusal(dir).message).toBe('applied'); // same digests: only the id tells the two apart
    expect(refusal(dir, fixture.checkpoint, original.digest).code).toBe('PATCH_ID_MISMATCH');
  });

  it('a forged created_by in patch.json; provenance.json is outside the id and never trusted', () => {
    const forged = copyPatch((j) =>
      Object.assign(j, { created_by: { package: 'iwibench-ts', package_version: '0.1.0', episode: 'someone-else' } }),
    );
    expect(asLight(forged)).toBe('PATCH_ID_MISMATCH');
    expect(refusal(forged).code).toBe('PATCH_INVALID'); // under its own id: patch.json has no created_by
    const provenance = copyPatch();
    writeFileSync(
      path.join(provenance, 'provenance.json'),
      JSON.stringify({ patch_id: lightId, created_by: { episode: 'forged' } }),
    );
    expect(patchDigest(provenance)).toBe(lightId);
    expect(asLight(provenance)).toBeUndefined(); // applies: who made it decides nothing
  });

  it('patch.json reformatted to equal JSON: the id is over the bytes', () => {
    const dir = copyPatch((j) => j); // JSON.stringify without indentation: the same object
    expect(JSON.parse(readFileSync(path.join(dir, 'patch.json'), 'utf8'))).toEqual(
      JSON.parse(readFileSync(path.join(lightDir, 'patch.json'), 'utf8')),
    );
    expect(asLight(dir)).toBe('PATCH_ID_MISMATCH');
  });
});
