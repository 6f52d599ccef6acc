// The editor harness's public surface: resolve the editor's settings once, then `runEditor` per attempt.
export type { BuiltinContext, BuiltinEditor, EpisodeHandle } from './builtin.ts';
export { BUILTIN_EDITORS, noop } from './builtin-editors.ts';
export {
  editorApiFailure,
  openaiClient,
  EditorReplyError,
  type EditorApiFailure,
  type EditorApiFailureKind,
} from './client.ts';
export {
  EDITOR_APIS,
  EDITOR_DEFAULTS,
  EditorConfigError,
  isLocalApi,
  publicConfig,
  KNOWN_REASONING_EFFORTS,
  RESPONSES_MODELS,
  resolveEditorConfig,
  type EditorApi,
  type EditorConfig,
  type EditorOptions,
  type Effort,
} from './config.ts';
export { checkEditorEndpoint } from './endpoint.ts';
export { firstMessage, systemPrompt } from './prompt.ts';
export { runEditor, type EditorRunResult, type RunEditorOptions } from './run.ts';
export type { EditorUsage, StopReason } from './tally.ts';
export { loadScript, parseScript, ScriptError, type EditorScript, type ScriptCall } from './script.ts';
export { Trace, type TraceLine, type Usage } from './trace.ts';
