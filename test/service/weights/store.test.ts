// Overlays: episodes share the pristine BF16 arrays and copy a tensor only when they first write it; an edit is
// visible to the next engine run through episode.source, never to the pristine source or another episode; revert
// replays the log prefix; memory is 2 bytes per parameter and grows by the edited tensors only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bf16Value, Gemma3Engine, numel } from '../../../engine/index.ts';
import { bf16Sha256 } from '../../../service/weights/patch.ts';
import { WeightStore } from '../../../service/weights/store.ts';
import { sameBits } from '../../fixtures.ts';
import { errorOf, tinyFixture, turnCounter, type TinyFixture } from './fixtures.ts';

const UP = 'model.layers.3.mlp.up_proj.weight'; // [128, 64]
const DOWN = 'model.layers.3.mlp.down_proj.weight'; // [64, 128]
const EMBED = 'model.embed_tokens.weight';
const IDS = [2, 105, 2364, 107, 3689, 563, 506, 5279, 236881];

let fixture: TinyFixture;

beforeAll(() => {
  fixture = tinyFixture('tiny');
});
afterAll(() => fixture.cleanup());

describe('WeightStore overlays', () => {
  it('copies a tensor on first write only, and never touches the pristine array or another episode', () => {
    const store = new WeightStore(fixture.checkpoint);
    const pristine = store.pristineBits(UP);
    const pristineDigest = bf16Sha256(pristine);
    const a = store.createEpisode('a');
    const b = store.createEpisode('b');
    expect(a.source.bf16(UP)).toBe(pristine); // shared until written

    a.write({ op: 'fill', tensor: UP, slice: [0], value: 2 });
    const own = a.source.bf16(UP);
    expect(own).not.toBe(pristine);
    expect(bf16Value(own[0]!)).toBe(2);
    a.write({ op: 'fill', tensor: UP, slice: [1], value: 3 });
    expect(a.source.bf16(UP)).toBe(own); // later writes go in place

    expect(bf16Sha256(store.pristineSource.bf16(UP))).toBe(pristineDigest);
    expect(b.source.bf16(UP)).toBe(pristine);
    expect(store.source('a')).toBe(a.source);
    expect(a.source.bf16(DOWN)).toBe(store.pristineBits(DOWN)); // untouched: shared
    expect(store.memory().overlayBytes).toEqual({ a: 128 * 64 * 2, b: 0 });
  });

  it("holds BF16 bits, 2 bytes per parameter, exactly the checkpoint's bytes", () => {
    const store = new WeightStore(fixture.checkpoint);
    store.preload();
    const text = [...fixture.checkpoint.tensors.values()].filter((t) =>
      t.name.startsWith(fixture.checkpoint.config.tensor_prefix),
    );
    const parameters = text.reduce((a, t) => a + numel(t.shape), 0);
    expect(store.memory().pristineBytes).toBe(2 * parameters);
    for (const t of text) {
      const bits = store.pristineBits(t.name);
      expect(bits).toBeInstanceOf(Uint16Array);
      expect(
        Buffer.from(bits.buffer, bits.byteOffset, bits.byteLength).equals(
          Buffer.from(fixture.checkpoint.readBytes(t.name)),
        ),
      ).toBe(true);
    }
  });

  it('shows an edit through episode.source.bf16 at once, with pristine unchanged', () => {
    const store = new WeightStore(fixture.checkpoint);
    const e = store.createEpisode('e');
    const before = store.pristineBits(DOWN).slice();
    const seen = e.source.bf16(DOWN); // what the engine would read
    e.write({ op: 'fill', tensor: DOWN, slice: [5, [0, 3]], value: 0.3 }); // 0.3 is no BF16 value: rounded, to 0x3e9a
    const after = e.source.bf16(DOWN);
    expect(Array.from(after.subarray(5 * 128, 5 * 128 + 4))).toEqual([0x3e9a, 0x3e9a, 0x3e9a, before[5 * 128 + 3]]);
    expect(e.bits(DOWN)).toBe(after);
    expect(seen).toBe(store.pristineBits(DOWN)); // the array read before the write was the pristine one, and still is
    expect(Buffer.from(store.pristineSource.bf16(DOWN).buffer).equals(Buffer.from(before.buffer))).toBe(true);
    e.write({ op: 'scale', tensor: DOWN, slice: [5, [0, 3]], factor: 2 });
    expect(bf16Value(e.source.bf16(DOWN)[5 * 128]!)).toBe(2 * bf16Value(0x3e9a)); // in place: the same array, new bits
    expect(e.source.bf16(DOWN)).toBe(after);
  });

  it('reverts to pristine or to an earlier op count by replaying the log', () => {
    const store = new WeightStore(fixture.checkpoint);
    const e = store.createEpisode('e');
    const digests = [bf16Sha256(e.bits(UP))];
    e.write({ op: 'scale', tensor: UP, slice: [[0, 64]], factor: 1.5 });
    digests.push(bf16Sha256(e.bits(UP)));
    e.write({
      op: 'low_rank_add',
      tensor: UP,
      slice: [
        [10, 20],
        [null, null, -1],
      ],
      alpha: 0.5,
      u: Array.from({ length: 10 }, (_, i) => [i / 10]),
      v: Array.from({ length: 64 }, () => [1]),
    });
    digests.push(bf16Sha256(e.bits(UP)));
    e.write({ op: 'fill', tensor: DOWN, value: 0 });

    expect(e.revert(2)).toEqual({ opCount: 2 });
    expect(bf16Sha256(e.bits(UP))).toBe(digests[2]);
    expect(e.bits(DOWN)).toBe(store.pristineBits(DOWN)); // the dropped op's tensor is no longer in the overlay
    expect(e.touchedTensors()).toEqual([UP]);
    e.revert(1);
    expect(bf16Sha256(e.bits(UP))).toBe(digests[1]);
    expect(e.ops.map((op) => op.op)).toEqual(['scale']);
    e.revert();
    expect(e.opCount).toBe(0);
    expect(e.bits(UP)).toBe(store.pristineBits(UP));
    expect(e.overlayBytes()).toBe(0);
    expect(errorOf(() => e.revert(1)).code).toBe('REVERT_OUT_OF_RANGE');
    expect(errorOf(() => e.revert(-1)).code).toBe('REVERT_OUT_OF_RANGE');
    expect(errorOf(() => e.revert(0.5)).code).toBe('REVERT_OUT_OF_RANGE');
  });

  it('holds only edited tensors per episode: N episodes editing small slices cost N copies of those tensors', () => {
    const store = new WeightStore(fixture.checkpoint);
    store.preload();
    const model = store.memory().pristineBytes;
    expect(model).toBe([...fixture.checkpoint.tensors.values()].reduce((a, t) => a + t.byteLength, 0)); // all BF16, as stored
    for (let i = 0; i < 8; i++)
      store
        .createEpisode(`e${i}`)
        .write({ op: 'fill', tensor: `model.layers.${i % 6}.mlp.down_proj.weight`, slice: [0, [0, 4]], value: 1 });
    const overlays = Object.values(store.memory().overlayBytes);
    expect(overlays).toEqual(Array(8).fill(64 * 128 * 2));
    expect(store.memory().pristineBytes).toBe(model);
    store.dropEpisode('e0');
    expect(Object.keys(store.memory().overlayBytes)).toHaveLength(7);
    expect(errorOf(() => store.episode('e0')).code).toBe('EPISODE_NOT_FOUND');
    expect(() => store.createEpisode('e1')).toThrow('already exists');
  });

  it('makes an edit visible to the next engine run with no rebuild, per episode', async () => {
    const store = new WeightStore(fixture.checkpoint);
    const engine = await Gemma3Engine.create({ checkpoint: fixture.checkpoint, source: store.pristineSource });
    try {
      const base = await engine.logits(IDS);
      const a = store.createEpisode('a');
      const b = store.createEpisode('b');
      expect(sameBits(await engine.logits(IDS, { weights: a.source }), base)).toBe(true);

      a.write({ op: 'scale', tensor: 'lm_head.weight', slice: [[0, 1000]], factor: 3 }); // the tied head: changes logits of ids < 1000
      const edited = await engine.logits(IDS, { weights: a.source });
      const V = fixture.checkpoint.config.vocab_size;
      const last = (logits: Float32Array) => logits.subarray((IDS.length - 1) * V, IDS.length * V);
      expect(last(edited)[5]).not.toBe(last(base)[5]);
      expect(sameBits(await engine.logits(IDS, { weights: b.source }), base)).toBe(true);
      expect(sameBits(await engine.logits(IDS), base)).toBe(true);

      a.revert();
      expect(sameBits(await engine.logits(IDS, { weights: a.source }), base)).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it('makes a first copy a slice at a time, the event loop turning between slices; a refused op keeps none', async () => {
    const store = new WeightStore(fixture.checkpoint);
    const pristine = store.pristineBits(EMBED); // 262,144 × 64 values: two slices of 8 M
    const sliced = store.createEpisode('sliced');
    const whole = store.createEpisode('whole');
    let betweens = 0;
    const between = async () => {
      betweens++;
    };
    const op = { op: 'fill', tensor: EMBED, slice: [[100, 102]], value: 0.5 };
    const turns = turnCounter();
    const outcome = await sliced.writeInSlices(op, between);
    expect(turns.stop()).toBeGreaterThanOrEqual(1); // the loop ran between the slices, not only after the copy
    expect(betweens).toBe(1);
    expect(outcome).toEqual(whole.write(op));
    expect(
      sameBits(new Float32Array(sliced.source.bf16(EMBED).buffer), new Float32Array(whole.source.bf16(EMBED).buffer)),
    ).toBe(true);
    expect(sliced.source.bf16(EMBED)).not.toBe(pristine);

    // Refused by its plan after the copy (the result overflows BF16), or before it (no such tensor): nothing kept.
    const refused = store.createEpisode('refused');
    const overflow = { op: 'scale', tensor: EMBED, slice: [0], factor: 1e300 };
    await expect(refused.writeInSlices(overflow, between)).rejects.toMatchObject({ code: 'NON_FINITE_VALUE' });
    await expect(refused.writeInSlices({ ...overflow, tensor: 'model.nope' }, between)).rejects.toThrow();
    expect(refused.source.bf16(EMBED)).toBe(pristine);
    expect(refused.opCount).toBe(0);
    expect(store.memory().overlayBytes.refused).toBe(0);
  });

  it('reverts in slices as revert does, and a revert stopped between slices changes nothing', async () => {
    const store = new WeightStore(fixture.checkpoint);
    const e = store.createEpisode('e');
    e.write({ op: 'fill', tensor: EMBED, slice: [[3, 5]], value: 0.25 });
    const afterOne = bf16Sha256(e.bits(EMBED));
    e.write({ op: 'scale', tensor: EMBED, slice: [4], factor: -2 });
    e.write({ op: 'fill', tensor: UP, slice: [0], value: 1 });
    const afterThree = [bf16Sha256(e.bits(EMBED)), bf16Sha256(e.bits(UP))];
    let betweens = 0;
    const stop = async () => {
      betweens++;
      throw new Error('the call was cancelled');
    };
    await expect(e.revertInSlices(1, stop)).rejects.toThrow('the call was cancelled');
    expect(betweens).toBe(1); // the embedding's copy, stopped after its first slice
    expect(e.opCount).toBe(3);
    expect([bf16Sha256(e.bits(EMBED)), bf16Sha256(e.bits(UP))]).toEqual(afterThree);
    await expect(e.revertInSlices(4, async () => {})).rejects.toMatchObject({ code: 'REVERT_OUT_OF_RANGE' });

    expect(await e.revertInSlices(1, async () => {})).toEqual({ opCount: 1 });
    expect(bf16Sha256(e.bits(EMBED))).toBe(afterOne);
    expect(e.bits(UP)).toBe(store.pristineBits(UP));
    expect(e.overlayBytes()).toBe(store.pristineBits(EMBED).byteLength);
  });

  it('answers unknown episodes with EPISODE_NOT_FOUND and keeps vision out of the cache', () => {
    const store = new WeightStore(fixture.checkpoint);
    expect(errorOf(() => store.source('nope')).code).toBe('EPISODE_NOT_FOUND');
    expect(store.pristineBits('lm_head.weight')).toBe(store.pristineBits(EMBED)); // alias → one cached array
  });
});
