// Flags shared by the commands that drive an editor (run-prime, run-pilot, demo).
import {
  checkEditorEndpoint,
  EDITOR_APIS,
  KNOWN_REASONING_EFFORTS,
  resolveEditorConfig,
  type EditorConfig,
} from '../taskset/index.ts';

export const EDITOR_FLAG_DEFAULTS = {
  'editor-model': 'gpt-6.1-terra',
  'editor-base-url': undefined as string | undefined,
  'editor-label': undefined as string | undefined, // default: the editor model
  api: undefined as string | undefined, // chat | responses; default chosen by model
  'reasoning-effort': undefined as string | undefined,
};

export const EDITOR_FLAG_HELP = {
  'editor-model':
    'an API model (through the editor proxy, or --editor-base-url with the key in OPENAI_API_KEY), script:FILE.json, or builtin:noop|demo|rank-one',
  'editor-base-url':
    "an OpenAI-compatible API's base URL, e.g. http://127.0.0.1:8773/v1 (a --buffer-chat proxy) or a provider's; default $OPENAI_BASE_URL, else the editor proxy at http://127.0.0.1:8770/v1",
  'editor-label': 'the label results and reports carry; default: the editor model',
  api: 'chat or responses; default by model (Responses for gpt-6.1-sol and gpt-6-astra)',
  'reasoning-effort': `any level the provider takes, passed through (OpenAI's: ${KNOWN_REASONING_EFFORTS.join('|')}), or omit to leave the field out; default none for gpt-6.1-terra, low for the Responses models, the provider's own otherwise`,
};

export const EDITOR_FLAG_CHOICES = { api: EDITOR_APIS };

/** The editor of a command's flags; an API on this machine (the editor proxy by default) must answer, before any episode. */
export async function editorFromFlags(
  flags: typeof EDITOR_FLAG_DEFAULTS,
): Promise<{ config: EditorConfig; label: string }> {
  const config = resolveEditorConfig({
    model: flags['editor-model'],
    baseUrl: flags['editor-base-url'],
    api: flags.api as 'chat' | 'responses' | undefined,
    reasoningEffort: flags['reasoning-effort'],
  });
  await checkEditorEndpoint(config);
  return { config, label: flags['editor-label'] ?? editorLabel(flags['editor-model']) };
}

/** The label an editor model gets by default: the model, a script's folder left out. */
export function editorLabel(model: string): string {
  return model.replace(/^script:.*\//, 'script:');
}
