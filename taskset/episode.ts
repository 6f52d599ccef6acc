// Builds the full episode spec of (family, seed, control seed) and the editor's view of it.
import type { Tokenizer } from '../engine/index.ts';
import { generalControls } from './controls.ts';
import { EPISODE_SIZES } from './families/define.ts';
import { familyById } from './families/index.ts';
import { FAMILY_VERSION, type EditorView, type EpisodeSpec, type FamilyId, type Item } from './types.ts';

export type EpisodeOptions = { tokenizer: Tokenizer; controlSeed?: number };

export function assertSeed(value: unknown, what = 'seed'): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${what} must be a non-negative integer, got ${JSON.stringify(value)}`);
  }
}

/** The full spec (admin view). Same arguments → byte-identical JSON. `controlSeed` defaults to `seed`. */
export function episodeSpec(family: FamilyId | string, seed: number, options: EpisodeOptions): EpisodeSpec {
  const spec = familyById(family);
  assertSeed(seed);
  const controlSeed = options.controlSeed ?? seed;
  assertSeed(controlSeed, 'control seed');
  const part = spec.episode(seed, options.tokenizer);
  const controls = generalControls(controlSeed, part.controlExclusions);
  if (controls.length !== EPISODE_SIZES.controls)
    throw new Error(`general controls: ${controls.length}, expected ${EPISODE_SIZES.controls}`);
  return {
    family: spec.id,
    familyVersion: FAMILY_VERSION,
    seed,
    controlSeed,
    paramsKey: part.paramsKey,
    params: part.params,
    objective: part.objective,
    relevantTokenIds: part.relevantTokenIds,
    practice: part.practice,
    terminal: part.terminal,
    controls,
  };
}

/**
 * The spec of command-line arguments: the family and seeds are checked before the tokenizer loads, so a typo fails
 * at once (used by the `episode` and `check` commands).
 */
export async function episodeSpecFromArgs(
  family: string,
  seed: number,
  controlSeed: number | undefined,
  tokenizer: () => Promise<Tokenizer>,
): Promise<EpisodeSpec> {
  familyById(family);
  assertSeed(seed);
  if (controlSeed !== undefined) assertSeed(controlSeed, 'control seed');
  return episodeSpec(family, seed, { tokenizer: await tokenizer(), controlSeed });
}

/** What the editor is shown: no parameters beyond the objective, no terminal items, no controls. */
export function editorView(spec: EpisodeSpec): EditorView {
  return {
    family: spec.family,
    familyVersion: spec.familyVersion,
    seed: spec.seed,
    objective: spec.objective,
    relevantTokenIds: spec.relevantTokenIds,
    practice: spec.practice,
  };
}

/** Every graded item of a spec: terminal items, then the general controls. */
export function gradedItems(spec: EpisodeSpec): Item[] {
  return [...spec.terminal.target, ...spec.terminal.preservation, ...spec.terminal.override, ...spec.controls];
}

/** One graded item by id, or a clear error listing what exists. */
export function itemById(spec: EpisodeSpec, id: string): Item {
  const items = gradedItems(spec);
  const item = items.find((i) => i.id === id);
  if (!item) {
    const sample = items
      .slice(0, 3)
      .map((i) => i.id)
      .join(', ');
    throw new Error(
      `no item "${id}" in ${spec.family} seed ${spec.seed} (ids look like ${sample}, …; ${items.length} items)`,
    );
  }
  return item;
}
