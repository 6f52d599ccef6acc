// The public surface of the taskset, and the only way into taskset/ from outside it (test/core/layers.test.ts).
// Everything else under taskset/ is internal.

// The benchmark: the ten families of IWIBench 0.2.2, episode specs, checks, general controls, scoring, eligibility.
export { FAMILIES, familyById, isFamilyId } from './families/index.ts';
export { EPISODE_SIZES, messagesOf, type FamilySpec } from './families/define.ts';
export {
  episodeSpec,
  episodeSpecFromArgs,
  editorView,
  gradedItems,
  itemById,
  assertSeed,
  type EpisodeOptions,
} from './episode.ts';
export { generalControls } from './controls.ts';
export { runCheck, passes, checkParts, identifyLanguage, normalise, countWords } from './checks/index.ts';
export { scoreEpisode, type EpisodeScore, type ItemScore, type Outputs, type RetentionCount } from './scoring.ts';
export { eligibility, THRESHOLDS, type Eligibility } from './eligibility.ts';
export { splitPool, PUBLIC_SHARE, type Split } from './split.ts';
export { Rng } from '../core/random.ts';
export { gemma3Tokenizer } from './tokenizer.ts';
export * from './types.ts';

// The front door: Taskset, Task and the toolsets an editor is given.
export {
  Task,
  Taskset,
  SERVICE_TOOLSET,
  defineToolset,
  type Toolset,
  type EpisodeRef,
  type EpisodeSetup,
} from './taskset.ts';

// Scoring a patch in fresh processes, and the results file it writes.
export { Evaluator, evaluationItems, RESULTS_FORMAT, type ItemResult, type ResultsFile } from './evaluation.ts';

// Runs: calibration, one attempt, a pilot of attempts, a replay on terminal items.
export { calibrate, readCalibration, type Calibration } from './calibration.ts';
export { runAttempt, type AttemptStatus } from './attempt.ts';
export { runPilot, runPilotAttempt, resumeLine, type PilotAttemptContext } from './pilot.ts';
export { recordedTerminal } from './replay.ts';

// Pilots on a queue (BullMQ on Redis): jobs, workers, the operator's commands, the dashboard.
export * from './queue/index.ts';

// The service as a client sees it.
export { AdminClient, type ServiceEnv } from './service-client.ts';

// The editor harness: an editor's settings, its endpoint check, and what its calls cost.
export {
  checkEditorEndpoint,
  EDITOR_APIS,
  KNOWN_REASONING_EFFORTS,
  resolveEditorConfig,
  type EditorConfig,
  type EditorUsage,
  type Usage,
} from './harness/index.ts';
