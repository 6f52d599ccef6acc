// Built-in editors (`--editor-model builtin:NAME`): code that drives an episode itself, with no API, for baselines
// and demos. A built-in calls `editor.turn()` once per reply a model would make and uses the tools as the service
// client does (a refusal throws ServiceError); the harness counts and traces both, and submits when it returns.
// A budget refusal it does not catch ends the episode like a model editor's ('turn_limit' or 'budget'). This file is
// the contract; builtin-editors.ts holds the registry and runs them.
import type { EpisodeBrief, EditorClient } from '../service-client.ts';
import type { Trace } from './trace.ts';

/** The episode as a built-in sees it: no submit, which is the harness's. */
export type EpisodeHandle = Pick<EditorClient, 'episodeId' | 'brief' | 'turn' | 'tool'>;
export type BuiltinContext = { editor: EpisodeHandle; brief: EpisodeBrief; trace: Trace };
export type BuiltinEditor = (context: BuiltinContext) => Promise<{ finalReply: string }>;
