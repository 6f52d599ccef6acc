// The report's tables: per-attempt patch summary, group means and order, and the seeded bootstrap interval.
import { describe, expect, it } from 'vitest';
import type { LabelledAttempt } from '../../report/collect.ts';
import { attemptRow, attemptRows, bootstrapMeanCi, mean, summaryRows } from '../../report/table.ts';
import { GRID, resultsFile, type FixtureAttempt } from './fixtures.ts';

const labelled = (a: FixtureAttempt, file = `runs/${a.family}-${a.seed}/results.json`): LabelledAttempt => ({
  file,
  attempt: `${a.family}-${a.seed}`,
  results: resultsFile(a),
  editor: a.editor ?? 'unlabelled',
});

describe('attempt rows', () => {
  it('sums the patch: ‖ΔW‖_F over all tensors, the largest relative change, changed parameters', () => {
    const row = attemptRow(
      labelled({
        ...GRID[0]!,
        patch: {
          'model.layers.0.mlp.up_proj.weight': { changed: 5, delta_frobenius: 3, relative_delta: 0.02 },
          'model.layers.1.mlp.up_proj.weight': { changed: 7, delta_frobenius: 4, relative_delta: null },
          'model.layers.2.mlp.up_proj.weight': { changed: 1, delta_frobenius: 0, relative_delta: 0.05 },
        },
      }),
    );
    expect(row).toMatchObject({
      changed_parameters: 13,
      tensors_changed: 3,
      patch_ops: 3,
      delta_frobenius: 5,
      max_relative_delta: 0.05,
    });
  });

  it('leaves patch and resource columns empty when the results have none', () => {
    const row = attemptRow(labelled({ ...GRID[0]!, patch: null, resources: null }));
    expect(row).toMatchObject({
      changed_parameters: null,
      tensors_changed: null,
      patch_ops: null,
      delta_frobenius: null,
      max_relative_delta: null,
      turns: null,
      tool_calls: null,
      forward_tokens: null,
    });
  });

  it('sorts by target, editor, family and seed, whatever the input order', () => {
    const other = { id: 'google/gemma-3-4b-it', revision: '093f9f388b31de276ce2de164bdc2081324b9767' };
    const attempts = [...GRID, { ...GRID[0]!, model: other }].map((a) =>
      labelled(a, `runs/${a.model?.id ?? 'm'}/${a.editor}/${a.family}/${a.seed}/results.json`),
    );
    const rows = attemptRows([...attempts].reverse());
    expect(rows.map((r) => [r.model_id, r.editor, r.family, r.seed])).toEqual(
      [...rows]
        .map((r) => [r.model_id, r.editor, r.family, r.seed])
        .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1)),
    );
    expect(rows.at(-1)!.model_id).toBe(other.id);
    const summary = summaryRows(rows);
    expect(summary.filter((s) => s.model_id === other.id).map((s) => [s.editor, s.family, s.n])).toEqual([
      ['alpha', 'alias_acquisition', 1],
      ['alpha', 'all', 1],
    ]);
  });
});

describe('bootstrap interval of the mean reward', () => {
  const values = Array.from({ length: 40 }, (_, i) => ((i * 37) % 41) / 40); // spread over [0, 1]

  it('is the same for the same key and values, and depends on the key', () => {
    expect(bootstrapMeanCi(values, 'k')).toEqual(bootstrapMeanCi(values, 'k'));
    expect(bootstrapMeanCi(values, 'k')).not.toEqual(bootstrapMeanCi(values, 'other'));
  });

  it('brackets the mean, and is about ±1.96 standard errors wide for 40 values', () => {
    const [low, high] = bootstrapMeanCi(values, 'k');
    const m = mean(values);
    expect(low).toBeLessThan(m);
    expect(high).toBeGreaterThan(m);
    const sd = Math.sqrt(values.reduce((s, v) => s + (v - m) ** 2, 0) / values.length);
    const normal = 2 * 1.96 * (sd / Math.sqrt(values.length));
    expect((high - low) / normal).toBeGreaterThan(0.9);
    expect((high - low) / normal).toBeLessThan(1.1);
  });

  it('collapses to the value when every reward is equal or there is one attempt', () => {
    expect(bootstrapMeanCi([0.3, 0.3, 0.3], 'k')).toEqual([0.3, 0.3]);
    expect(bootstrapMeanCi([0.7], 'k')).toEqual([0.7, 0.7]);
  });
});
