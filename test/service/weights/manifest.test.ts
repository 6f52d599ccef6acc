// The manifest of the 1B layout (tiny) and the 4B layout (tiny-4b: language_model.* names, vision tower): every
// tensor once, the tied head as an alias of embed_tokens, vision fixed, and the filters the editor uses.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Manifest } from '../../../service/weights/manifest.ts';
import { tinyFixture, type TinyFixture, errorOf } from './fixtures.ts';

let tiny: TinyFixture;
let tiny4b: TinyFixture;
let m1: Manifest;
let m4: Manifest;

beforeAll(() => {
  tiny = tinyFixture('tiny');
  tiny4b = tinyFixture('tiny-4b');
  m1 = Manifest.fromCheckpoint(tiny.checkpoint);
  m4 = Manifest.fromCheckpoint(tiny4b.checkpoint);
});
afterAll(() => {
  tiny.cleanup();
  tiny4b.cleanup();
});

describe('Manifest', () => {
  it('lists every checkpoint tensor once, text decoder first, with shape, dtype and numel', () => {
    expect(m1.rows.map((r) => r.name).sort()).toEqual([...tiny.checkpoint.tensors.keys()].sort());
    expect(m1.rows.length).toBe(2 + 6 * 13);
    expect(m1.rows[0]).toEqual({
      name: 'model.embed_tokens.weight',
      shape: [262144, 64],
      dtype: 'BF16',
      numel: 262144 * 64,
      writable: true,
      aliases: ['lm_head.weight'],
      layer: null,
      kind: 'embedding',
    });
    expect(m1.rows.at(-1)!.name).toBe('model.norm.weight');
    const down = m1.resolve('model.layers.2.mlp.down_proj.weight');
    expect(down).toMatchObject({ shape: [64, 128], numel: 8192, layer: 2, kind: 'mlp', writable: true, aliases: [] });
  });

  it('marks the 4B vision tower and projector fixed, with the reason', () => {
    const vision = m4.filter({ kind: 'vision' });
    expect(vision.length).toBe(
      [...tiny4b.checkpoint.tensors.keys()].filter(
        (n) => n.startsWith('vision_tower.') || n.startsWith('multi_modal_projector.'),
      ).length,
    );
    expect(vision.length).toBeGreaterThan(10);
    for (const row of vision) {
      expect(row.writable).toBe(false);
      expect(row.layer).toBeNull(); // encoder layer numbers are not decoder layers
      expect(row.fixed_reason).toContain('vision');
    }
    expect(m4.filter({ writable: true }).length).toBe(2 + 7 * 13);
    const error = errorOf(() => m4.resolveWritable('multi_modal_projector.mm_input_projection_weight'));
    expect(error.code).toBe('WEIGHT_NOT_WRITABLE');
    expect(error.message).toContain('multi_modal_projector.mm_input_projection_weight');
  });

  it('resolves the tied LM head to embed_tokens (one writable tensor)', () => {
    expect(m1.resolveWritable('lm_head.weight').name).toBe('model.embed_tokens.weight');
    expect(m4.resolveWritable('language_model.lm_head.weight').name).toBe('language_model.model.embed_tokens.weight');
    expect(m4.rows.filter((r) => r.aliases.length > 0).map((r) => r.name)).toEqual([
      'language_model.model.embed_tokens.weight',
    ]);
  });

  it('refuses unknown names with suggestions', () => {
    const error = errorOf(() => m4.resolve('lm_head.weight'));
    expect(error.code).toBe('WEIGHT_NOT_FOUND');
    expect(error.message).toContain('"language_model.lm_head.weight"');
    expect(errorOf(() => m1.resolve('')).code).toBe('WEIGHT_NOT_FOUND');
    expect(errorOf(() => m1.resolve(42)).code).toBe('WEIGHT_NOT_FOUND');
  });

  it('filters by glob or substring, layer, kind and writability', () => {
    expect(m1.filter({ name: 'layers.3.mlp.*_proj.weight' })).toEqual([]); // a glob matches the whole name
    expect(m1.filter({ name: '*.layers.3.mlp.*_proj.weight' }).map((r) => r.name)).toEqual([
      'model.layers.3.mlp.gate_proj.weight',
      'model.layers.3.mlp.up_proj.weight',
      'model.layers.3.mlp.down_proj.weight',
    ]);
    expect(m1.filter({ name: 'q_norm' }).length).toBe(6); // substring
    expect(m1.filter({ name: 'lm_head' }).map((r) => r.name)).toEqual(['model.embed_tokens.weight']); // via its alias
    expect(m1.filter({ layer: [0, 5], kind: 'attention' }).length).toBe(8);
    expect(m1.filter({ layer: 4, kind: ['norm'] }).length).toBe(6);
    expect(m1.filter({ kind: 'embedding' }).length).toBe(1);
    expect(m1.filter({ writable: false })).toEqual([]);
    expect(m1.filter()).toHaveLength(m1.rows.length);
    expect(m1.filter({ name: 'model.layers.?.self_attn.k_proj.weight' }).length).toBe(6);
  });

  it('refuses malformed filters', () => {
    expect(errorOf(() => m1.filter({ kind: 'mlps' as never })).code).toBe('OP_INVALID');
    expect(errorOf(() => m1.filter({ layer: '3' as never })).code).toBe('OP_INVALID');
    expect(errorOf(() => m1.filter({ name: 3 as never })).code).toBe('OP_INVALID');
    expect(errorOf(() => m1.filter({ writable: 'yes' as never })).code).toBe('OP_INVALID');
    expect(errorOf(() => m1.filter({ layers: [1] } as never)).message).toContain(
      'unknown manifest filter field(s) layers',
    );
  });
});
