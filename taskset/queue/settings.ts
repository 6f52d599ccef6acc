// What decides an attempt's result beyond its episode, editor label and repeat: the editor's settings as the worker
// will send them, the items evaluated, the taskset's family version, the target, and the engine's arithmetic (the
// precision, the device, and the name of the arithmetic they give in this code: engine/arithmetic.ts). A job carries
// them and a short hash of them; its id names the hash, so two configurations are never taken for one another, and a
// float32 attempt never reuses a bf16 one's folder.
import { createHash } from 'node:crypto';
import Type, { type Static } from 'typebox';
import {
  arithmeticName,
  DEFAULT_PRECISION,
  DEVICES,
  PRECISIONS,
  type Device,
  type Precision,
} from '../../engine/index.ts';
import {
  EDITOR_APIS,
  resolveEditorConfig,
  type EditorApi,
  type EditorConfig,
  type EditorOptions,
} from '../harness/config.ts'; // not the harness's index: a worker's modules load no editor client
import { FAMILY_VERSION } from '../types.ts';

export const AttemptSettingsSchema = Type.Object(
  {
    editor: Type.Object(
      {
        model: Type.String({ minLength: 1 }),
        api: Type.Unsafe<EditorApi>({ type: 'string', enum: [...EDITOR_APIS] }),
        base_url: Type.String({ minLength: 1 }),
        reasoning_effort: Type.Optional(Type.String({ minLength: 1 })),
        temperature: Type.Optional(Type.Number()),
        max_output_tokens: Type.Integer({ minimum: 1 }),
        max_turns: Type.Integer({ minimum: 1 }),
      },
      { additionalProperties: false },
    ),
    /** 0: whole episodes; N: the first N items of each kind (smoke tests). */
    items_per_kind: Type.Integer({ minimum: 0 }),
    family_version: Type.String({ minLength: 1 }),
    target: Type.Object(
      { model: Type.String({ minLength: 1 }), revision: Type.String({ minLength: 1 }) },
      { additionalProperties: false },
    ),
    /** The engine's precision, of the service the editor uses and of the evaluation processes. */
    precision: Type.Unsafe<Precision>({ type: 'string', enum: [...PRECISIONS] }),
    /** Where the projections run, for the service and the evaluation processes. */
    device: Type.Unsafe<Device>({ type: 'string', enum: [...DEVICES] }),
    /** arithmeticName(precision, device) as the enqueuing code names it: a worker of another code refuses the job. */
    arithmetic: Type.String({ minLength: 1 }),
  },
  { additionalProperties: false },
);
export type AttemptSettings = Static<typeof AttemptSettingsSchema>;

/** How a worker computes: its service's precision and device, and the arithmetic this code gives them. */
export type WorkerArithmetic = Pick<AttemptSettings, 'precision' | 'device' | 'arithmetic'>;

export function workerArithmetic(precision: Precision = DEFAULT_PRECISION, device: Device = 'cpu'): WorkerArithmetic {
  return { precision, device, arithmetic: arithmeticName(precision, device) };
}

/** Every leaf of the settings by its dotted path (absent optional fields left out). */
function leaves(value: unknown, prefix = ''): Map<string, unknown> {
  const out = new Map<string, unknown>();
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const key of Object.keys(value).sort())
      for (const [k, v] of leaves((value as Record<string, unknown>)[key], prefix ? `${prefix}.${key}` : key))
        out.set(k, v);
  } else if (value !== undefined) out.set(prefix, value);
  return out;
}

/** 8 hex digits of SHA-256 over the settings' leaves in a fixed order (key order in the object does not count). */
export function settingsHash(settings: AttemptSettings): string {
  const canonical = JSON.stringify([...leaves(settings)]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 8);
}

/** The fields that differ, as `path: old → new` (an absent one as "(none)"). */
export function settingsDiff(before: AttemptSettings, after: AttemptSettings): string[] {
  const a = leaves(before);
  const b = leaves(after);
  const show = (v: unknown) => (v === undefined ? '(none)' : JSON.stringify(v));
  return [...new Set([...a.keys(), ...b.keys()])]
    .sort()
    .filter((key) => a.get(key) !== b.get(key))
    .map((key) => `${key}: ${show(a.get(key))} → ${show(b.get(key))}`);
}

/**
 * The settings of an editor as a command's flags name it, resolved here as every worker will resolve them; the
 * precision (default bf16) and the device (default cpu) with the arithmetic they give.
 */
export function attemptSettings(
  editor: EditorOptions,
  record: { itemsPerKind: number; target: AttemptSettings['target']; precision?: Precision; device?: Device },
  env: NodeJS.ProcessEnv = process.env,
): AttemptSettings {
  // The key is each worker's (checked there); it decides nothing here.
  const config = resolveEditorConfig(editor, {
    ...env,
    OPENAI_API_KEY: env.OPENAI_API_KEY ?? 'checked-by-each-worker',
  });
  return {
    editor: {
      model: config.model,
      api: config.api,
      base_url: config.baseUrl,
      ...(config.reasoningEffort !== undefined ? { reasoning_effort: config.reasoningEffort } : {}),
      ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
      max_output_tokens: config.maxOutputTokens,
      max_turns: config.maxTurns,
    },
    items_per_kind: record.itemsPerKind,
    family_version: FAMILY_VERSION,
    target: record.target,
    ...workerArithmetic(record.precision, record.device),
  };
}

/**
 * The editor a job's settings name, as this worker resolves them, or the fields in which this worker would differ
 * (its own code's defaults, its target, its arithmetic): such a job is not run here.
 */
export function editorForSettings(
  settings: AttemptSettings,
  here: { target: AttemptSettings['target']; precision: Precision; device: Device },
  env: NodeJS.ProcessEnv = process.env,
): EditorConfig {
  const { editor } = settings;
  const options: EditorOptions = {
    model: editor.model,
    baseUrl: editor.base_url,
    api: editor.api,
    reasoningEffort: editor.reasoning_effort ?? 'omit',
    maxTurns: editor.max_turns,
  };
  const config = resolveEditorConfig(options, env);
  const mine = attemptSettings(options, { ...here, itemsPerKind: settings.items_per_kind }, env);
  const differ = settingsDiff(settings, mine);
  if (differ.length > 0)
    throw new Error(`this worker would run the job with other settings (job → worker): ${differ.join('; ')}`);
  return config;
}
