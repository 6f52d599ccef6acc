import { beforeAll, describe, expect, it } from 'vitest';
import { gemma3TokenizerDir, Tokenizer } from '../../engine/index.ts';
import { eligibility, THRESHOLDS } from '../../taskset/eligibility.ts';
import { episodeSpec, gradedItems } from '../../taskset/episode.ts';
import { scoreEpisode, type Outputs } from '../../taskset/scoring.ts';
import type { EpisodeSpec, Item } from '../../taskset/types.ts';

let spec: EpisodeSpec;
let alias: EpisodeSpec;
beforeAll(async () => {
  const tokenizer = await Tokenizer.load(gemma3TokenizerDir());
  spec = episodeSpec('lexical_inhibition', 4, { tokenizer });
  alias = episodeSpec('alias_acquisition', 4, { tokenizer });
});

/** Outputs for every graded item: `answer(item)` decides what the model says. */
const outputs = (s: EpisodeSpec, answer: (item: Item, index: number) => string): Outputs =>
  Object.fromEntries(gradedItems(s).map((item, i) => [item.id, answer(item, i)]));
const pristine = (s: EpisodeSpec) => outputs(s, (item) => item.pristineAnswer);
/** The edited model of the brief: edited answers on targets, pristine answers elsewhere. */
const perfect = (s: EpisodeSpec) => outputs(s, (item) => item.editedAnswer ?? item.pristineAnswer);

describe('scoreEpisode', () => {
  it('scores a perfect edit 1: full gain, full retention', () => {
    const score = scoreEpisode(spec, pristine(spec), perfect(spec));
    expect(score.targetSuccess).toEqual({ base: 0, edited: 1, count: 24 });
    expect(score.gain).toBe(1);
    expect(score.retention.overall).toBe(1);
    expect(score.retention.counts.all).toEqual({ baseCorrect: 96, retained: 96, total: 96 });
    expect(score.reward).toBe(1);
    expect(score.notes).toEqual([]);
    expect(score.items).toHaveLength(24 + 24 + 8 + 64);
  });

  it('gives a no-op exactly zero', () => {
    for (const base of [
      pristine(spec),
      perfect(spec),
      outputs(spec, (item, i) => (i % 3 ? item.pristineAnswer : (item.editedAnswer ?? 'no'))),
    ]) {
      const score = scoreEpisode(spec, base, { ...base });
      expect(score.gain).toBe(0);
      expect(Object.is(score.reward, 0)).toBe(true);
    }
  });

  it('computes gain = max(0, (edited − base) / (1 − base)) and reward = gain × retention', () => {
    // Base: 6 of 24 targets already succeed (0.25). Edited: 15 of 24 (0.625). Gain (0.625 − 0.25) / 0.75 = 0.5.
    const base = outputs(spec, (item, i) =>
      item.kind === 'target' && i < 6 ? item.editedAnswer! : item.pristineAnswer,
    );
    const editedTargets = outputs(spec, (item, i) =>
      item.kind === 'target' && i < 15 ? item.editedAnswer! : item.pristineAnswer,
    );
    // The edit also breaks 8 of the 64 general controls (all base-correct): retention (96 − 8) / 96.
    const broken = new Set(spec.controls.slice(0, 8).map((c) => c.id));
    const edited = Object.fromEntries(
      Object.entries(editedTargets).map(([id, text]) => [id, broken.has(id) ? '' : text]),
    );
    const score = scoreEpisode(spec, base, edited);
    expect(score.targetSuccess.base).toBe(0.25);
    expect(score.targetSuccess.edited).toBe(0.625);
    expect(score.gain).toBeCloseTo(0.5, 12);
    expect(score.retention.overall).toBeCloseTo(88 / 96, 12);
    expect(score.retention.generalControls).toBeCloseTo(56 / 64, 12);
    expect(score.retention.spillover).toBe(1);
    expect(score.retention.overrides).toBe(1);
    expect(score.reward).toBeCloseTo(0.5 * (88 / 96), 12);
  });

  it('never gives negative gain: an edit that loses target success gains 0', () => {
    const base = outputs(spec, (item, i) =>
      item.kind === 'target' && i < 10 ? item.editedAnswer! : item.pristineAnswer,
    );
    const score = scoreEpisode(spec, base, pristine(spec));
    expect(score.targetSuccess.edited).toBeLessThan(score.targetSuccess.base);
    expect(score.gain).toBe(0);
    expect(score.reward).toBe(0);
  });

  it('counts retention on base-correct items only, and reports spillover and overrides apart', () => {
    const base = outputs(spec, (item) => (item.kind === 'preservation' ? 'wrong' : item.pristineAnswer)); // base fails every preservation item
    const edited = outputs(spec, (item) =>
      item.kind === 'override' ? 'wrong' : (item.editedAnswer ?? item.pristineAnswer),
    );
    const score = scoreEpisode(spec, base, edited);
    expect(score.retention.counts.preservation).toEqual({ baseCorrect: 0, retained: 0, total: 24 });
    expect(score.retention.spillover).toBeNull(); // not measured: nothing was base-correct
    expect(score.retention.overrides).toBe(0);
    expect(score.retention.generalControls).toBe(1);
    expect(score.retention.overall).toBeCloseTo(64 / 72, 12);
  });

  it('edge case: base target success 1.0 gives gain 0 and says so', () => {
    const score = scoreEpisode(spec, perfect(spec), perfect(spec));
    expect(score.targetSuccess.base).toBe(1);
    expect(score.gain).toBe(0);
    expect(score.reward).toBe(0);
    expect(score.notes.join(' ')).toMatch(/no headroom/);
  });

  it('edge case: no base-correct retention item gives retention 1 (nothing could be lost) and says so', () => {
    const base = outputs(spec, (item) => (item.kind === 'target' ? item.pristineAnswer : 'wrong'));
    const score = scoreEpisode(
      spec,
      base,
      outputs(spec, (item) => (item.kind === 'target' ? item.editedAnswer! : 'wrong')),
    );
    expect(score.retention.counts.all.baseCorrect).toBe(0);
    expect([score.retention.generalControls, score.retention.spillover, score.retention.overrides]).toEqual([
      null,
      null,
      null,
    ]);
    expect(score.retention.overall).toBe(1);
    expect(score.reward).toBe(1);
    expect(score.notes.join(' ')).toMatch(/ineligible/);
    expect(eligibility(spec, base).eligible).toBe(false);
  });

  it('refuses outputs that miss an item or name an unknown one', () => {
    const base = pristine(spec);
    const { [spec.controls[0]!.id]: _gone, ...missing } = base;
    expect(() => scoreEpisode(spec, missing, base)).toThrow(/base outputs .* missing control-/);
    expect(() => scoreEpisode(spec, base, { ...base, 'target-99': 'x' })).toThrow(
      /edited outputs .* unknown target-99/,
    );
  });
});

describe('eligibility', () => {
  it('keeps the thresholds in one place', () => {
    expect(THRESHOLDS).toEqual({
      minPreservationOverrideCorrect: 0.8,
      minTargetContentCorrect: 0.8,
      maxBaseTargetSuccess: 0.5,
    });
  });

  it('accepts a capable base with headroom and reports what it measured', () => {
    const result = eligibility(spec, pristine(spec));
    expect(result).toEqual({
      eligible: true,
      reasons: [],
      measured: { preservationOverrideCorrect: 1, targetContentCorrect: 1, baseTargetSuccess: 0 },
      thresholds: THRESHOLDS,
    });
  });

  it('refuses a base without headroom', () => {
    const base = outputs(spec, (item, i) =>
      item.kind === 'target' && i < 13 ? item.editedAnswer! : item.pristineAnswer,
    );
    const result = eligibility(spec, base);
    expect(result.measured.baseTargetSuccess).toBeCloseTo(13 / 24, 12);
    expect(result.eligible).toBe(false);
    expect(result.reasons.join(' ')).toMatch(/no headroom/);
    const justEnough = outputs(spec, (item, i) =>
      item.kind === 'target' && i < 12 ? item.editedAnswer! : item.pristineAnswer,
    );
    expect(eligibility(spec, justEnough).eligible).toBe(true); // 0.5 is allowed
  });

  it('refuses a base without the capability: kept items, or the content of target items', () => {
    const kept = [...spec.terminal.preservation, ...spec.terminal.override];
    const failing = new Set(kept.slice(0, 7).map((i) => i.id)); // 25 of 32 correct = 78 %
    const result = eligibility(
      spec,
      outputs(spec, (item) => (failing.has(item.id) ? 'wrong' : item.pristineAnswer)),
    );
    expect(result.eligible).toBe(false);
    expect(result.measured.preservationOverrideCorrect).toBeCloseTo(25 / 32, 12);
    const fine = new Set(kept.slice(0, 6).map((i) => i.id)); // 26 of 32 = 81 %
    expect(
      eligibility(
        spec,
        outputs(spec, (item) => (fine.has(item.id) ? 'wrong' : item.pristineAnswer)),
      ).eligible,
    ).toBe(true);

    const noContent = eligibility(
      spec,
      outputs(spec, (item) => (item.kind === 'target' ? 'I have no idea.' : item.pristineAnswer)),
    );
    expect(noContent.measured.targetContentCorrect).toBe(0);
    expect(noContent.reasons.join(' ')).toMatch(/content of 0.0 % of target items/);
  });

  it('skips the content threshold for families whose targets have no content part', () => {
    const result = eligibility(
      alias,
      outputs(alias, (item) => item.pristineAnswer),
    );
    expect(result.measured.targetContentCorrect).toBeNull();
    expect(result.eligible).toBe(true);
  });

  it('needs an output for every terminal item', () => {
    expect(() => eligibility(spec, {})).toThrow(/no base output for item "(preservation|target)-00"/);
  });
});
