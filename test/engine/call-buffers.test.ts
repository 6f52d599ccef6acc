// A call's buffers (call-buffers.ts): slots reused from one forward pass to the next. The CPU projector writes every
// element of what it hands out, so products into buffers left full of NaN by an earlier, larger pass are the products
// into fresh memory, bit for bit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallBuffers } from '../../engine/call-buffers.ts';
import { Checkpoint } from '../../engine/checkpoint.ts';
import { paddedChunk } from '../../engine/chunk.ts';
import { CpuProjector } from '../../engine/cpu-projector.ts';
import { layerTensorNames } from '../../engine/names.ts';
import { resolveSettings } from '../../engine/settings.ts';
import { checkpointSource } from '../../engine/weight-source.ts';
import { fixtureCheckpoint, sameBits } from '../fixtures.ts';

describe('CallBuffers', () => {
  it('hands out a slot’s own memory again, grown when asked for more, apart from every other slot', () => {
    const buffers = new CallBuffers();
    const first = buffers.take('a', 6);
    first.fill(7);
    expect(first.length).toBe(6);
    const again = buffers.take('a', 4);
    expect(again.length).toBe(4);
    expect(again.buffer).toBe(first.buffer);
    expect([...again]).toEqual([7, 7, 7, 7]); // kept as last written: the taker writes before it reads
    const other = buffers.take('b', 6);
    expect(other.buffer).not.toBe(first.buffer);
    const grown = buffers.take('a', 9);
    expect(grown.length).toBe(9);
    expect(grown.buffer).not.toBe(first.buffer);
    expect(buffers.take('a', 2).buffer).toBe(grown.buffer);
  });
});

describe('the CPU projector into a call’s buffers', () => {
  let checkpoint: Checkpoint;
  let projector: CpuProjector;
  beforeAll(async () => {
    checkpoint = Checkpoint.open(fixtureCheckpoint('tiny'));
    projector = await CpuProjector.create(checkpoint, resolveSettings({}));
  });
  afterAll(async () => {
    await projector.release();
    checkpoint.close();
  });

  it('writes every element: products into buffers poisoned by a larger pass equal those into fresh ones', async () => {
    const weights = checkpointSource(checkpoint);
    const { hidden_size: H, vocab_size: V } = checkpoint.config;
    const n = layerTensorNames(checkpoint.config.tensor_prefix, 0);
    const names = [n.q_proj, n.k_proj, n.v_proj];
    const x = (rows: number) => Float32Array.from({ length: rows * H }, (_, i) => Math.sin(i * 0.37));
    // One sequence of `rows` tokens.
    const products = async (buffers: CallBuffers, rows: number) => {
      const ids = Array.from({ length: rows }, (_, i) => 2 + i);
      const project = projector.forChunk(weights, paddedChunk([ids], [0], 0, rows), buffers);
      return [...(await project(names, x(rows))), await projector.head(weights, x(rows), rows, 0, V, buffers)];
    };
    const buffers = new CallBuffers();
    for (const out of await products(buffers, 9)) out.fill(NaN);
    const reused = await products(buffers, 5);
    const fresh = await products(new CallBuffers(), 5);
    expect(reused.map((out) => out.length)).toEqual(fresh.map((out) => out.length));
    reused.forEach((out, p) => expect(sameBits(out, fresh[p]!)).toBe(true));
    expect(reused.every((out) => out.every(Number.isFinite))).toBe(true);
  });
});
