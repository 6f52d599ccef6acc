// read_weights: metadata filtered through the manifest, slices inline (exact BF16 values) or as handles past the
// inline bound, summaries over tensors, slices and handles; reads show the episode's current values.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import { bf16ToF32 } from '../../../engine/index.ts';
import { isIwiError } from '../../../service/errors.ts';
import { LIMITS } from '../../../service/api/limits.ts';
import { ReadWeightsArgs } from '../../../service/api/tools.ts';
import { nest } from '../../../service/weights/reads.ts';
import { WeightStore, type EpisodeWeights } from '../../../service/weights/store.ts';
import { errorOf, tinyFixture, turnCounter, type TinyFixture } from './fixtures.ts';

const GATE = 'model.layers.1.mlp.gate_proj.weight'; // [128, 64]

let fixture: TinyFixture;
let store: WeightStore;
let episode: EpisodeWeights;
let stored: Float32Array; // decoded straight from the file's bytes

beforeAll(() => {
  fixture = tinyFixture('tiny');
  store = new WeightStore(fixture.checkpoint);
  episode = store.createEpisode('r');
  const bytes = fixture.checkpoint.readBytes(GATE);
  stored = bf16ToF32(new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2));
});
afterAll(() => fixture.cleanup());

describe('readWeights', () => {
  it('metadata: manifest rows through the filter', () => {
    const result = episode.read({ op: 'metadata', filter: { layer: 1, kind: 'mlp' } });
    expect(result).toMatchObject({ op: 'metadata', count: 3 });
    expect((result as { tensors: { name: string }[] }).tensors.map((t) => t.name)).toEqual([
      GATE,
      'model.layers.1.mlp.up_proj.weight',
      'model.layers.1.mlp.down_proj.weight',
    ]);
    expect((episode.read({ op: 'metadata' }) as { count: number }).count).toBe(80);
  });

  it('slice: exact BF16 values inline, nested in the selection shape', () => {
    const result = episode.read({
      op: 'slice',
      tensor: GATE,
      slice: [
        [-1, -4, -1],
        [0, 64, 30],
      ],
    });
    expect(result).toEqual({
      op: 'slice',
      target: GATE,
      slice: '[-1:-4:-1, 0:64:30]',
      shape: [3, 3],
      values: [127, 126, 125].map((r) => [0, 30, 60].map((c) => stored[r * 64 + c])),
    });
    expect(episode.read({ op: 'slice', tensor: GATE, slice: [5, 7] })).toMatchObject({
      shape: [],
      values: stored[5 * 64 + 7],
    });
  });

  it('slice: a handle past the inline bound, or when asked', () => {
    const rows = Math.floor(LIMITS.inlineElements / 64);
    expect(episode.read({ op: 'slice', tensor: GATE, slice: [[0, rows]] })).toHaveProperty('values');
    const big = episode.read({ op: 'slice', tensor: GATE, slice: [[0, rows + 1]] }) as {
      handle: { id: string; shape: number[]; bytes: number; origin: string };
    };
    expect(big.handle).toMatchObject({
      shape: [rows + 1, 64],
      bytes: (rows + 1) * 64 * 4,
      origin: `slice ${GATE}[0:${rows + 1}]`,
    });
    expect(Array.from(store.handles.get('r', big.handle.id).data)).toEqual(
      Array.from(stored.subarray(0, (rows + 1) * 64)),
    );
    const asked = episode.read({ op: 'slice', tensor: GATE, slice: [0, [0, 2]], as_handle: true }) as {
      handle: { id: string };
    };
    // A handle can be read like a tensor.
    expect(episode.read({ op: 'slice', handle: asked.handle.id, slice: [[null, null, -1]] })).toMatchObject({
      target: `handle ${asked.handle.id}`,
      values: [stored[1], stored[0]],
    });
  });

  it('slice: refuses a selection larger than the handle byte bound before copying it', () => {
    const small = new WeightStore(fixture.checkpoint, { handleBytes: 1 << 20 }).createEpisode('small');
    let message = '';
    try {
      small.read({ op: 'slice', tensor: 'lm_head.weight', slice: [[0, 5000]] }); // 5000 × 64 × 4 B > 1 MiB
    } catch (error) {
      expect(isIwiError(error, 'HANDLE_LIMIT')).toBe(true);
      message = (error as Error).message;
    }
    expect(message).toBe(
      "slice model.embed_tokens.weight[0:5000]: 5000×64 float32 values need 1.2 MiB, more than the 1.0 MiB an episode's handles may hold; read a smaller slice",
    );
    expect(small.store.handles.usage('small')).toEqual({ count: 0, bytes: 0 });
  });

  it('summary over a tensor, a slice and a handle', () => {
    const whole = episode.read({ op: 'summary', tensor: GATE }) as {
      count: number;
      max: number;
      row_norm_quantiles: unknown;
    };
    expect(whole.count).toBe(128 * 64);
    expect(whole.max).toBe(Math.max(...stored));
    const part = episode.read({ op: 'summary', tensor: GATE, slice: [3] }) as {
      count: number;
      l2_norm: number;
      row_norm_quantiles: unknown;
    };
    expect(part.count).toBe(64);
    expect(part.l2_norm).toBeCloseTo(Math.hypot(...stored.subarray(192, 256)), 12);
    expect(part.row_norm_quantiles).toBeNull();
    const handle = episode.read({ op: 'slice', tensor: GATE, slice: [3], as_handle: true }) as {
      handle: { id: string };
    };
    expect(episode.read({ op: 'summary', handle: handle.handle.id })).toMatchObject({
      target: `handle ${handle.handle.id}`,
      count: 64,
      l2_norm: part.l2_norm,
    });
  });

  it('summary in slices: the same result, the event loop turning between steps of the stream', async () => {
    // The embedding: 262,144 × 64 values, so each of the two passes takes several steps of ~2 M.
    const request = { op: 'summary', tensor: 'model.embed_tokens.weight' } as const;
    let betweens = 0;
    const turns = turnCounter();
    const sliced = await episode.readInSlices(request, async () => {
      betweens++;
    });
    expect(betweens).toBeGreaterThanOrEqual(10);
    expect(turns.stop()).toBeGreaterThanOrEqual(10);
    expect(sliced).toEqual(episode.read(request));
    // A selection is gathered in steps too: a summary of most rows reversed, a handle of 40,000 rows (2 M values).
    const reversed = { op: 'summary' as const, tensor: 'model.embed_tokens.weight', slice: [[250_000, 10, -1]] };
    betweens = 0;
    expect(await episode.readInSlices(reversed, async () => void betweens++)).toEqual(episode.read(reversed));
    expect(betweens).toBeGreaterThanOrEqual(8); // 8 pieces of up to 32,768 rows, then the summary's steps
    const rows = {
      op: 'slice' as const,
      tensor: 'model.embed_tokens.weight',
      slice: [[1000, 41_000]],
      as_handle: true,
    };
    betweens = 0;
    const handled = (await episode.readInSlices(rows, async () => void betweens++)) as { handle: { id: string } };
    expect(betweens).toBe(1);
    const expected = bf16ToF32(store.pristineBits('model.embed_tokens.weight').subarray(1000 * 64, 41_000 * 64));
    expect(
      Buffer.from(store.handles.get('r', handled.handle.id).data.buffer).equals(Buffer.from(expected.buffer)),
    ).toBe(true);
    // Reads that are no stream answer at once, as read() does.
    const metadata = { op: 'metadata', filter: { layer: 1, kind: 'mlp' } } as const;
    expect(await episode.readInSlices(metadata, async () => expect.fail('no slice'))).toEqual(episode.read(metadata));
  });

  it('shows the episode its own edits, and the alias the same values', () => {
    const e = store.createEpisode('edited');
    e.write({ op: 'fill', tensor: GATE, slice: [0, [0, 2]], value: 0.75 });
    expect(e.read({ op: 'slice', tensor: GATE, slice: [0, [0, 3]] })).toMatchObject({
      values: [0.75, 0.75, stored[2]],
    });
    expect(episode.read({ op: 'slice', tensor: GATE, slice: [0, [0, 1]] })).toMatchObject({ values: [stored[0]] });
    const viaAlias = e.read({ op: 'slice', tensor: 'lm_head.weight', slice: [9, [0, 4]] });
    expect(viaAlias).toMatchObject({
      target: 'model.embed_tokens.weight',
      values: Array.from(bf16ToF32(store.pristineBits('model.embed_tokens.weight').subarray(9 * 64, 9 * 64 + 4))),
    });
  });

  it('refuses malformed reads: their shape at the route (the body schema), the rest in the store', () => {
    // The route's schema (what Fastify's ajv compiles) refuses these before the store sees them.
    const validate = new Ajv({ strict: false }).compile(ReadWeightsArgs);
    for (const body of [
      { op: 'peek', tensor: GATE },
      { op: 'slice', tensor: GATE, slices: [] },
      { op: 'summary', tensor: GATE, slice: 3 },
      { op: 'slice', tensor: GATE, as_handle: 'yes' },
      { op: 'metadata', filter: { kind: 'x' } },
      [1],
    ])
      expect(validate(body), JSON.stringify(body)).toBe(false);
    expect(validate({ op: 'slice', tensor: GATE, slice: [0, [0, 4]], as_handle: true })).toBe(true);
    // What the schema cannot say: the fields of each op, and the values against the weights.
    expect(errorOf(() => episode.read({ op: 'metadata', tensor: GATE })).code).toBe('OP_INVALID');
    expect(errorOf(() => episode.read({ op: 'slice' })).code).toBe('OP_INVALID');
    expect(errorOf(() => episode.read({ op: 'slice', tensor: GATE, handle: 'h1' })).code).toBe('OP_INVALID');
    expect(errorOf(() => episode.read({ op: 'slice', tensor: 'nope' })).code).toBe('WEIGHT_NOT_FOUND');
    expect(errorOf(() => episode.read({ op: 'slice', tensor: GATE, slice: [128] })).code).toBe('SLICE_OUT_OF_RANGE');
    expect(errorOf(() => episode.read({ op: 'slice', handle: 'h999' })).code).toBe('HANDLE_NOT_FOUND');
  });

  it('nest() builds row-major nested lists', () => {
    expect(nest(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 1, 3])).toEqual([[[1, 2, 3]], [[4, 5, 6]]]);
    expect(nest(new Float32Array([7]), [])).toBe(7);
  });
});
