// Structure of every family over seeds 0–59: sizes, determinism, split disjointness (no terminal prompt in what the
// editor sees), answers that fit their checks, pool sizes and the number of distinct parameter sets.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { gemma3TokenizerDir, Tokenizer } from '../../engine/index.ts';
import { runCheck } from '../../taskset/checks/index.ts';
import { DATA_DIR, readData } from '../../taskset/data.ts';
import { editorView, episodeSpec } from '../../taskset/episode.ts';
import { EPISODE_SIZES, messagesOf } from '../../taskset/families/define.ts';
import { factsFile } from '../../taskset/families/facts.ts';
import { FAMILIES, familyById } from '../../taskset/families/index.ts';
import { FAMILY_IDS, type EpisodeSpec, type Item } from '../../taskset/types.ts';

let tokenizer: Tokenizer;
const specs = new Map<string, EpisodeSpec[]>();
const SEEDS = Array.from({ length: 60 }, (_, i) => i);

/** The fewest distinct parameter sets over seeds 0–59 any family may have (README: per-family counts). */
const MIN_DISTINCT: Record<string, number> = {
  default_response_language: 8,
  answer_length_control: 8,
  false_suggestion_resistance: 12,
  lexical_inhibition: 15,
};

beforeAll(async () => {
  tokenizer = await Tokenizer.load(gemma3TokenizerDir());
  for (const family of FAMILIES)
    specs.set(
      family.id,
      SEEDS.map((seed) => episodeSpec(family.id, seed, { tokenizer })),
    );
});

/** One seed per distinct parameter set among seeds 0–59 (candidates depend on the parameters only). */
const distinctSeeds = (family: string) => [
  ...new Map(SEEDS.map((seed) => [familyById(family).params(seed).paramsKey, seed])).values(),
];
const itemsOf = (spec: EpisodeSpec): Item[] => [
  ...spec.terminal.target,
  ...spec.terminal.preservation,
  ...spec.terminal.override,
];
const promptText = (item: { messages: { content: string }[] }) => item.messages.map((m) => m.content).join('\n');

describe('the family list', () => {
  it('lists the ten families of families.md, in order', () => {
    expect(FAMILIES.map((f) => f.id)).toEqual([...FAMILY_IDS]);
  });

  it('rejects an unknown family and a bad seed with a clear error', () => {
    expect(() => familyById('alias')).toThrow(/unknown family "alias"; known: alias_acquisition/);
    expect(() => episodeSpec('alias_acquisition', -1, { tokenizer })).toThrow(/seed must be a non-negative integer/);
    expect(() => episodeSpec('alias_acquisition', 1.5, { tokenizer })).toThrow(/seed must be a non-negative integer/);
    expect(() => episodeSpec('alias_acquisition', 1, { tokenizer, controlSeed: -2 })).toThrow(/control seed/);
  });
});

describe.each(FAMILIES.map((f) => f.id))('%s', (family) => {
  it('has the default sizes, unique ids and unique prompts in every episode', () => {
    for (const spec of specs.get(family)!) {
      expect(spec.terminal.target).toHaveLength(EPISODE_SIZES.target);
      expect(spec.terminal.preservation).toHaveLength(EPISODE_SIZES.preservation);
      expect(spec.terminal.override).toHaveLength(EPISODE_SIZES.override);
      expect(spec.practice).toHaveLength(EPISODE_SIZES.practice);
      expect(spec.controls).toHaveLength(EPISODE_SIZES.controls);
      const graded = [...itemsOf(spec), ...spec.controls];
      expect(new Set(graded.map((i) => i.id)).size).toBe(graded.length);
      expect(new Set(itemsOf(spec).map((i) => JSON.stringify(i.messages))).size).toBe(itemsOf(spec).length);
      for (const item of graded) expect(item.maxNewTokens >= 24 && item.maxNewTokens <= 96, item.id).toBe(true);
      expect(spec.familyVersion).toBe('0.2.2');
      expect(spec.controlSeed).toBe(spec.seed);
    }
  });

  it('is byte-identical for the same seed and differs between seeds', () => {
    const again = JSON.stringify(episodeSpec(family, 7, { tokenizer }));
    expect(again).toBe(JSON.stringify(specs.get(family)![7]));
    const texts = specs
      .get(family)!
      .slice(0, 12)
      .map((s) => JSON.stringify({ ...s, seed: 0, controlSeed: 0, controls: [] }));
    expect(new Set(texts).size).toBe(texts.length);
  });

  it('changes only the controls with the control seed', () => {
    const a = episodeSpec(family, 3, { tokenizer, controlSeed: 3 });
    const b = episodeSpec(family, 3, { tokenizer, controlSeed: 4 });
    expect(b.controlSeed).toBe(4);
    expect(JSON.stringify(b.terminal)).toBe(JSON.stringify(a.terminal));
    expect(JSON.stringify(b.controls)).not.toBe(JSON.stringify(a.controls));
  });

  it('shows the editor no terminal prompt, no control and no grading data', () => {
    for (const spec of specs.get(family)!) {
      const view = editorView(spec);
      expect(Object.keys(view).sort()).toEqual([
        'family',
        'familyVersion',
        'objective',
        'practice',
        'relevantTokenIds',
        'seed',
      ]);
      const shown = JSON.stringify(view);
      for (const item of [...itemsOf(spec), ...spec.controls]) {
        for (const message of item.messages.filter((m) => m.role === 'user')) {
          expect(
            shown.includes(JSON.stringify(message.content).slice(1, -1)),
            `${spec.seed} ${item.id}: ${message.content}`,
          ).toBe(false);
        }
      }
    }
  });

  it('draws practice and terminal items from disjoint sides of every pool', () => {
    const spec = familyById(family);
    for (const seed of distinctSeeds(family).slice(0, 20)) {
      const open = spec.candidates(seed, 'public');
      const closed = spec.candidates(seed, 'terminal');
      const publicPrompts = new Set(
        Object.values(open)
          .flat()
          .map((c) => promptText({ messages: messagesOf(c.prompt) })),
      );
      for (const c of Object.values(closed).flat())
        expect(publicPrompts.has(promptText({ messages: messagesOf(c.prompt) }))).toBe(false);
    }
  });

  it('has pristine answers that pass the content part (targets: fail the behaviour) and edited answers that pass', () => {
    for (const spec of specs.get(family)!) {
      for (const item of itemsOf(spec)) {
        const pristine = runCheck(item.check, item.pristineAnswer);
        if (item.kind === 'target') {
          expect(pristine.content && !pristine.behaviour, `${spec.seed} ${item.id} pristine: ${pristine.detail}`).toBe(
            true,
          );
          const edited = runCheck(item.check, item.editedAnswer!);
          expect(edited.behaviour && edited.content, `${spec.seed} ${item.id} edited: ${edited.detail}`).toBe(true);
        } else {
          expect(pristine.behaviour && pristine.content, `${spec.seed} ${item.id} pristine: ${pristine.detail}`).toBe(
            true,
          );
        }
      }
      for (const example of spec.practice) {
        expect(example.messages.length).toBeGreaterThan(0);
        expect(example.response.length).toBeGreaterThan(0);
      }
    }
  });

  it('has a stable params key that names the parameter set, and many distinct sets over seeds 0–59', () => {
    const byKey = new Map<string, string>();
    for (const spec of specs.get(family)!) {
      const params = JSON.stringify(spec.params);
      expect(byKey.get(spec.paramsKey) ?? params).toBe(params);
      byKey.set(spec.paramsKey, params);
      expect(familyById(family).params(spec.seed).paramsKey).toBe(spec.paramsKey);
    }
    expect(new Set(byKey.values()).size).toBe(byKey.size);
    expect(byKey.size).toBeGreaterThanOrEqual(MIN_DISTINCT[family] ?? 30);
  });

  it('gives sorted, unique, valid relevant token ids', () => {
    for (const spec of specs.get(family)!.slice(0, 10)) {
      const ids = spec.relevantTokenIds;
      expect([...new Set(ids)].sort((a, b) => a - b)).toEqual(ids);
      for (const id of ids) expect(id >= 0 && id < tokenizer.vocabSize).toBe(true);
    }
  });
});

describe('data', () => {
  it('carries the family version in every family data file', () => {
    const files = readdirSync(path.join(DATA_DIR, 'families')).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(11);
    for (const file of files) expect(readData<{ version: string }>(`families/${file}`).version, file).toBe('0.2.2');
  });

  it('alias_acquisition: every alias is one rare, non-special token with and without a leading space', () => {
    const { aliases } = readData<{ aliases: string[] }>('families/alias_acquisition.json');
    expect(aliases.length).toBeGreaterThanOrEqual(25);
    for (const alias of aliases) {
      expect(/^[b-df-hj-np-tv-z][a-z]+$/.test(alias), `${alias} starts with a consonant ("a ${alias}")`).toBe(true);
      const bare = tokenizer.encodeRaw(alias);
      const spaced = tokenizer.encodeRaw(` ${alias}`);
      expect(bare, alias).toHaveLength(1);
      expect(spaced, alias).toHaveLength(1);
      expect(tokenizer.idToToken(spaced[0]!)).toBe(`▁${alias}`);
      expect(Math.min(bare[0]!, spaced[0]!), `${alias} is a rare (late) token`).toBeGreaterThan(100_000);
      expect(tokenizer.encodeRaw(`What sound does a ${alias} make?`)).toContain(spaced[0]);
    }
    const spec = specs.get('alias_acquisition')![0]!;
    const alias = (spec.params as { alias: string }).alias;
    expect(spec.relevantTokenIds).toEqual(
      expect.arrayContaining([...tokenizer.encodeRaw(alias), ...tokenizer.encodeRaw(` ${alias}`)]),
    );
  });

  it('local_factual_update: every documented change builds with answers that fit its checks', () => {
    const family = familyById('local_factual_update');
    const seen = new Map<string, number>();
    for (let seed = 0; seen.size < factsFile().changes.length && seed < 2_000; seed++) {
      const key = family.params(seed).paramsKey;
      if (!seen.has(key)) seen.set(key, seed);
    }
    expect(seen.size).toBe(factsFile().changes.length);
    for (const seed of seen.values()) {
      for (const c of family.candidates(seed, 'terminal').target) {
        expect(runCheck(c.check, c.pristine).behaviour, c.pristine).toBe(false);
        const edited = runCheck(c.check, c.edited!);
        expect(edited.behaviour && edited.content, c.edited).toBe(true);
      }
    }
  });

  it('pools are big enough for every episode (public and terminal sides)', () => {
    for (const family of FAMILIES) {
      for (const seed of distinctSeeds(family.id)) {
        const open = family.candidates(seed, 'public');
        expect(open.target.length, `${family.id} ${seed}`).toBeGreaterThanOrEqual(6);
        const closed = family.candidates(seed, 'terminal');
        expect(closed.target.length).toBeGreaterThanOrEqual(EPISODE_SIZES.target);
        expect(closed.preservation.length).toBeGreaterThanOrEqual(EPISODE_SIZES.preservation);
        expect(closed.override.length).toBeGreaterThanOrEqual(EPISODE_SIZES.override);
      }
    }
  });
});
