// The editor's settings, resolved once from a command's flags and the environment (design.md "Taskset": Chat
// Completions by default, temperature 0, a 4,096-token response cap, reasoning none for the default editor and the
// provider's own default for any other Chat model; the Responses API for the models that need it). The result is
// frozen and saved without the key next to each attempt's trace (editor.json).
import { loadScript, ScriptError } from './script.ts';

export type EditorApi = 'chat' | 'responses';
export const EDITOR_APIS: readonly EditorApi[] = ['chat', 'responses'];

/** A reasoning effort as the provider names it: any string is passed through (IWIBench's rule; the provider answers). */
export type Effort = string;
/** The levels OpenAI's models take today, for the help; other providers have their own. */
export const KNOWN_REASONING_EFFORTS: readonly Effort[] = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

export type EditorConfig = Readonly<{
  /** The editor model id, or `script:FILE.json` / `builtin:NAME` (editors that need no API). */
  model: string;
  api: EditorApi;
  /** The API's base URL, ending in /v1. */
  baseUrl: string;
  /**
   * From OPENAI_API_KEY; absent for script: and builtin: editors, and may be absent for an API on this machine (the
   * editor proxy holds the key). Never written to a file.
   */
  apiKey?: string;
  /** Chat: `reasoning_effort`; Responses: `reasoning.effort`. Omitted from requests when undefined. */
  reasoningEffort?: Effort;
  /** Chat: `max_completion_tokens`; Responses: `max_output_tokens`. */
  maxOutputTokens: number;
  /** Chat only; omitted for the Responses API, whose reasoning models refuse it. */
  temperature?: number;
  /** Editor turns (requests) per episode; the service's `turns` budget may end the episode sooner. */
  maxTurns: number;
  /** Per request, in ms. */
  timeoutMs: number;
  /** SDK retries after the first try. */
  maxRetries: number;
}>;

export const EDITOR_DEFAULTS = Object.freeze({
  model: 'gpt-6.1-terra', // design.md: the default editor
  // IWIBench's runner talks to the transport proxy (`editor-proxy --port 8770`), which holds the key; OPENAI_BASE_URL
  // overrides it, as in the SDK, and --editor-base-url overrides both.
  baseUrl: 'http://127.0.0.1:8770/v1',
  maxOutputTokens: 4096, // design.md: response cap, both APIs
  chatTemperature: 0, // design.md
  maxTurns: 64, // = the service's default `turns` budget
  // The SDK's own defaults are a 10-minute timeout and 2 retries (on 408/409/429/≥500 and connection errors, with
  // backoff). We keep those values but pass them explicitly, so that editor.json records what a run used.
  timeoutMs: 600_000,
  maxRetries: 2,
});

/** Models that need the Responses API, with the reasoning effort design.md runs them at. */
export const RESPONSES_MODELS: Readonly<Record<string, Effort>> = Object.freeze({
  'gpt-6.1-sol': 'low',
  'gpt-6-astra': 'low',
});

/**
 * The reasoning effort sent by default, per built-in editor model (design.md). Any other model gets none: the field
 * is left out and the provider's default reasoning applies, unless `--reasoning-effort` is given.
 */
export const DEFAULT_EFFORTS: Readonly<Record<string, Effort>> = Object.freeze({
  'gpt-6.1-terra': 'none',
  ...RESPONSES_MODELS,
});

/**
 * What a command passes in: the `--editor-model`, `--editor-base-url`, `--api` and `--reasoning-effort` flags
 * (scripts/editor-flags.ts) and the request limits. Anything absent comes from the model, the environment or
 * EDITOR_DEFAULTS.
 */
export type EditorOptions = {
  model?: string;
  baseUrl?: string;
  /** chat | responses; by default from the model (RESPONSES_MODELS). */
  api?: string;
  /** Any level the provider takes (passed through), or `omit` to leave the field out of requests. */
  reasoningEffort?: string;
  maxTurns?: number;
  timeoutMs?: number;
  maxRetries?: number;
};

/** Every problem with the options at once (engine/config.ts's ConfigError style). */
export class EditorConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid editor settings:\n  - ${problems.join('\n  - ')}`);
    this.name = 'EditorConfigError';
  }
}

/** `script:FILE` or `builtin:NAME`: editors driven by code, with no API and no key. */
export function editorKind(model: string): 'api' | 'script' | 'builtin' {
  if (model.startsWith('script:')) return 'script';
  if (model.startsWith('builtin:')) return 'builtin';
  return 'api';
}

/**
 * Whether the API is on this machine (a loopback host): the editor proxy, which holds the provider's key itself, or a
 * local server. Only the process that talks to the provider needs the key.
 */
export function isLocalApi(baseUrl: string): boolean {
  return ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(baseUrl).hostname);
}

export const scriptFile = (model: string): string => model.slice('script:'.length);
export const builtinName = (model: string): string => model.slice('builtin:'.length);

export function resolveEditorConfig(options: EditorOptions = {}, env: NodeJS.ProcessEnv = process.env): EditorConfig {
  const problems: string[] = [];
  const model = options.model ?? EDITOR_DEFAULTS.model;
  const kind = editorKind(model);
  if (model.trim() === '') problems.push('--editor-model is empty');
  if (kind === 'script') {
    // Checked now, so that a bad script fails before an episode is created.
    try {
      loadScript(scriptFile(model));
    } catch (error) {
      if (!(error instanceof ScriptError)) throw error;
      problems.push(error.message);
    }
  }

  const { api: requestedApi, reasoningEffort: requestedEffort } = options;
  if (requestedApi !== undefined && !EDITOR_APIS.includes(requestedApi as EditorApi))
    problems.push(`--api must be one of ${EDITOR_APIS.join(', ')}, got "${requestedApi}"`);
  const api: EditorApi =
    (requestedApi as EditorApi | undefined) ?? (Object.hasOwn(RESPONSES_MODELS, model) ? 'responses' : 'chat');
  if (requestedEffort !== undefined && requestedEffort.trim() === '')
    problems.push('--reasoning-effort is empty (give a level, or omit to leave the field out)');
  const effortDefault = Object.hasOwn(DEFAULT_EFFORTS, model) ? DEFAULT_EFFORTS[model] : undefined;
  const reasoningEffort = requestedEffort === 'omit' ? undefined : (requestedEffort ?? effortDefault);

  const {
    maxTurns = EDITOR_DEFAULTS.maxTurns,
    timeoutMs = EDITOR_DEFAULTS.timeoutMs,
    maxRetries = EDITOR_DEFAULTS.maxRetries,
  } = options;
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    problems.push(`maxTurns must be a positive integer, got ${maxTurns}`);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    problems.push(`timeoutMs must be a positive integer, got ${timeoutMs}`);
  if (!Number.isInteger(maxRetries) || maxRetries < 0)
    problems.push(`maxRetries must be a non-negative integer, got ${maxRetries}`);

  const baseUrl = options.baseUrl ?? env.OPENAI_BASE_URL ?? EDITOR_DEFAULTS.baseUrl;
  const validUrl = URL.canParse(baseUrl) && /^https?:$/.test(new URL(baseUrl).protocol);
  if (!validUrl) problems.push(`--editor-base-url must be an http(s) URL, got "${baseUrl}"`);
  const apiKey = kind === 'api' ? env.OPENAI_API_KEY : undefined;
  if (kind === 'api' && !apiKey && validUrl && !isLocalApi(baseUrl))
    problems.push(
      `OPENAI_API_KEY is not set: editor model ${model} at ${baseUrl} needs an API key (the editor proxy on this machine, script: and builtin: editors need none)`,
    );

  if (problems.length > 0) throw new EditorConfigError(problems);
  return Object.freeze({
    model,
    api,
    baseUrl,
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(reasoningEffort !== undefined ? { reasoningEffort } : {}),
    maxOutputTokens: EDITOR_DEFAULTS.maxOutputTokens,
    ...(api === 'chat' ? { temperature: EDITOR_DEFAULTS.chatTemperature } : {}),
    maxTurns,
    timeoutMs,
    maxRetries,
  });
}

/** The config as it may be written to a file: everything but the key. */
export function publicConfig(config: EditorConfig): Omit<EditorConfig, 'apiKey'> {
  const { apiKey: _key, ...rest } = config;
  return rest;
}
