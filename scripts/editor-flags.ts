// Flags shared by the commands that drive an editor (run-prime, run-pilot, demo).
import { resolveEditorConfig, type EditorConfig } from '../taskset/harness/index.ts';

export const EDITOR_FLAG_DEFAULTS = {
  'editor-model': 'gpt-6.1-terra',
  'editor-base-url': undefined as string | undefined,
  'editor-label': undefined as string | undefined, // default: the editor model
  api: undefined as string | undefined, // chat | responses; default chosen by model
  'reasoning-effort': undefined as string | undefined,
};

export function editorFromFlags(flags: typeof EDITOR_FLAG_DEFAULTS): { config: EditorConfig; label: string } {
  const config = resolveEditorConfig({
    model: flags['editor-model'],
    baseUrl: flags['editor-base-url'],
    api: flags.api as 'chat' | 'responses' | undefined,
    reasoningEffort: flags['reasoning-effort'],
  });
  return { config, label: flags['editor-label'] ?? flags['editor-model'].replace(/^script:.*\//, 'script:') };
}
