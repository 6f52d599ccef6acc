// The public surface of the taskset: the ten families of IWIBench 0.2.2, episode specs, checks, general controls,
// scoring, eligibility, and the Taskset/Task/Toolset front door. Everything else under taskset/ is internal.
export { FAMILIES, familyById, isFamilyId } from './families/index.ts';
export { EPISODE_SIZES, type FamilySpec } from './families/define.ts';
export { episodeSpec, editorView, gradedItems, itemById, assertSeed, type EpisodeOptions } from './episode.ts';
export { generalControls } from './controls.ts';
export { runCheck, passes, checkParts, identifyLanguage, normalise, countWords } from './checks/index.ts';
export { scoreEpisode, type EpisodeScore, type ItemScore, type Outputs, type RetentionCount } from './scoring.ts';
export { eligibility, THRESHOLDS, type Eligibility } from './eligibility.ts';
export {
  Task,
  Taskset,
  SERVICE_TOOLSET,
  defineToolset,
  type Toolset,
  type EpisodeRef,
  type EpisodeSetup,
} from './taskset.ts';
export { splitPool, PUBLIC_SHARE, type Split } from './split.ts';
export { Rng } from './random.ts';
export * from './types.ts';
