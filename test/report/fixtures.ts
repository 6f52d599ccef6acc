// Synthetic but schema-true attempt folders for the report tests: results.json typed as ResultsFile, scored with
// scoring.ts's formulas from item counts, and trace.jsonl typed as the harness's TraceLine, in a pilot's layout
// (<runs>/attempts/<attempt-id>/).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RESULTS_FORMAT, type ItemResult, type ResultsFile } from '../../taskset/evaluation.ts';
import type { TraceLine, Usage } from '../../taskset/harness/trace.ts';
import type { RetentionCount } from '../../taskset/scoring.ts';
import { FAMILY_VERSION, type FamilyId } from '../../taskset/types.ts';

export const MODEL = { id: 'google/gemma-3-1b-it', revision: 'dcc83ea841ab6100d6b47a070329e1ba4cf78752' };
export const TARGET_ITEMS = 24;

/** [base-correct, retained] of one retention part. */
export type Part = [number, number];

export type FixtureAttempt = {
  editor: string | null;
  family: FamilyId;
  seed: number;
  /** Target items (of 24) that pass on pristine and on patched weights. */
  targets: { base: number; edited: number };
  retention: { controls: Part; preservation: Part; overrides: Part };
  /** Per-tensor ‖ΔW‖_F and relative ‖ΔW‖_F; null for no patch. */
  patch?: Record<string, { changed: number; delta_frobenius: number; relative_delta: number | null }> | null;
  resources?: { turns: number; tool_calls: number; forward_tokens: number } | null;
  model?: { id: string; revision: string };
};

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(os.tmpdir(), `iwibench-report-${prefix}-`));
}

export function attemptFolderName(a: Pick<FixtureAttempt, 'family' | 'seed' | 'editor'>): string {
  return `${a.family}-s${a.seed}-${a.editor ?? 'unlabelled'}-a0`;
}

/** results.json of one attempt, scored as scoring.ts scores (gain, retention, reward). */
export function resultsFile(a: FixtureAttempt): ResultsFile {
  const base = a.targets.base / TARGET_ITEMS;
  const edited = a.targets.edited / TARGET_ITEMS;
  const gain = base >= 1 ? 0 : Math.max(0, (edited - base) / (1 - base));
  const { controls, preservation, overrides } = a.retention;
  const count = ([baseCorrect, retained]: Part, total: number): RetentionCount => ({ baseCorrect, retained, total });
  const counts = {
    generalControls: count(controls, 64),
    preservation: count(preservation, 24),
    overrides: count(overrides, 8),
    all: count([controls[0] + preservation[0] + overrides[0], controls[1] + preservation[1] + overrides[1]], 96),
  };
  const rate = (c: RetentionCount) => (c.baseCorrect === 0 ? null : c.retained / c.baseCorrect);
  const overall = rate(counts.all) ?? 1;
  const model = a.model ?? MODEL;
  const tensors =
    a.patch === undefined
      ? { 'model.layers.3.mlp.down_proj.weight': { changed: 10, delta_frobenius: 0.5, relative_delta: 0.01 } }
      : a.patch;
  const resources =
    a.resources === undefined ? { turns: 12, tool_calls: 20, forward_tokens: 5000 + a.seed } : a.resources;
  return {
    format: RESULTS_FORMAT,
    versions: { package: '0.1.0', family_version: FAMILY_VERSION, model_id: model.id, revision: model.revision },
    args: { command: 'run-pilot' },
    episode: { family: a.family, seed: a.seed, control_seed: a.seed, params_key: `${a.family}/params-${a.seed % 5}` },
    editor: a.editor === null ? null : { label: a.editor, model: `${a.editor}-model` },
    patch:
      tensors === null
        ? null
        : {
            dir: 'patch',
            sha256: 'ab'.repeat(32),
            changed_parameters: Object.values(tensors).reduce((s, t) => s + t.changed, 0),
            tensors,
            ops: Object.keys(tensors).length,
          },
    score: {
      items: [],
      targetSuccess: { base, edited, count: TARGET_ITEMS },
      gain,
      retention: {
        overall,
        generalControls: rate(counts.generalControls),
        spillover: rate(counts.preservation),
        overrides: rate(counts.overrides),
        counts,
      },
      reward: gain * overall,
      notes: [],
    },
    resources:
      resources === null
        ? null
        : { ...resources, run_target_sequence_evaluations: 8, inspect_target_sequence_evaluations: 4 },
    items: [
      ...items('target', 'target', TARGET_ITEMS, a.targets.base, a.targets.edited),
      ...items('preservation', 'preservation', 24, preservation[0], preservation[1]),
      ...items('override', 'override', 8, overrides[0], overrides[1]),
      ...items('control', 'control', 64, controls[0], controls[1]),
    ],
    evaluation: { pristine_seconds: 1, edited_seconds: 1, forward_tokens: 1000 },
    created_at: '2026-03-01T00:00:00.000Z',
  };
}

/**
 * `total` graded items of one kind: the first `base` pass on pristine weights, the first `edited` on patched weights
 * (for retention items `edited` ≤ `base`: the retained ones are base-correct). Outputs differ by one word where a
 * verdict changes.
 */
function items(kind: ItemResult['kind'], prefix: string, total: number, base: number, edited: number): ItemResult[] {
  return Array.from({ length: total }, (_, i) => {
    const basePassed = i < base;
    const editedPassed = i < edited;
    const output = (passed: boolean) =>
      passed ? `The answer to question ${i} is Wever.` : `The answer to question ${i} is Croo.`;
    const verdict = (passed: boolean) => ({
      behaviour: passed,
      content: true,
      detail: passed ? 'gives "Wever"' : 'none of "Wever" given',
    });
    return {
      id: `${prefix}-${String(i).padStart(2, '0')}`,
      kind,
      messages: [{ role: 'user' as const, content: `Question ${i} of the ${kind} items?` }],
      max_new_tokens: 48,
      check: { type: 'answer_choice' as const, expected: ['Wever'], rejected: ['Croo'] },
      base: { output: output(basePassed), verdict: verdict(basePassed), passed: basePassed },
      edited: { output: output(editedPassed), verdict: verdict(editedPassed), passed: editedPassed },
    };
  });
}

/** Writes <runs>/attempts/<id>/results.json for each attempt; returns the attempt folders. */
export function writeRuns(runs: string, attempts: readonly FixtureAttempt[]): string[] {
  return attempts.map((a) => {
    const dir = path.join(runs, 'attempts', attemptFolderName(a));
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'results.json'), JSON.stringify(resultsFile(a), null, 2));
    return dir;
  });
}

export const OBJECTIVE = 'Update the model: the Prime Minister of Belgium is Bart De Wever <now>.';
export const SYSTEM_PROMPT = 'You edit the weights of a language model through tools.';

/**
 * A trace.jsonl shaped as the chat editor writes it: a brief, then per call a request (the growing message list), a
 * response with `usage` and one tool call, or an error (a failed call); `toolOutput` is the result text of call i.
 */
export function writeTrace(
  dir: string,
  calls: readonly (Usage | 'error')[],
  toolOutput: (i: number) => string = () => '{"result":{"values":[1,2]},"budget":{"tool_calls":99}}',
): void {
  const brief = {
    objective: { text: OBJECTIVE, structured: {} },
    practice: [{ messages: [{ role: 'user', content: 'Who leads Belgium?' }], response: 'Bart De Wever.' }],
    manifest: ['model.layers.{0..3}.mlp.down_proj.weight [128,256] BF16 writable'],
  };
  const lines: TraceLine[] = [{ type: 'brief', brief }];
  const messages: Record<string, unknown>[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: `Objective: ${OBJECTIVE}` },
  ];
  calls.forEach((call, turn) => {
    lines.push({ type: 'turn', turn });
    lines.push({ type: 'request', turn, api: 'chat', body: { model: 'editor-model', messages: [...messages] } });
    if (call === 'error') lines.push({ type: 'error', turn, duration_ms: 5, error: { message: 'rate limited' } });
    else {
      const toolCall = {
        id: `call-${turn}`,
        type: 'function',
        function: { name: 'read_weights', arguments: '{"op":"slice","tensor":"model.norm.weight"}' },
      };
      const message = { role: 'assistant', content: `Reading the norm, step ${turn}.`, tool_calls: [toolCall] };
      lines.push({
        type: 'response',
        turn,
        duration_ms: 100,
        request_id: `req-${turn}`,
        body: { choices: [{ message }] },
        usage: call,
        tool_calls: [toolCall],
        truncated: false,
      });
      lines.push({
        type: 'tool',
        turn,
        call_id: toolCall.id,
        name: 'read_weights',
        arguments: toolCall.function.arguments,
        duration_ms: 3,
        ok: !toolOutput(turn).startsWith('{"error"'),
        output: toolOutput(turn),
      });
      messages.push(message, { role: 'tool', tool_call_id: toolCall.id, content: toolOutput(turn) });
    }
  });
  lines.push({ type: 'stop', reason: 'final_reply' });
  const time = '2026-03-01T00:00:00.000Z';
  writeFileSync(path.join(dir, 'trace.jsonl'), lines.map((l) => JSON.stringify({ time, ...l })).join('\n') + '\n');
}

// The grid of the report tests: 2 editors × 3 families × 2 seeds. Retention parts are [base-correct, retained] of
// the general controls, preservation and override items; the comments give each attempt's gain × retention = reward.
const FULL = { controls: [60, 60], preservation: [16, 16], overrides: [4, 4] } satisfies FixtureAttempt['retention']; // 1
const R75 = { controls: [60, 45], preservation: [16, 12], overrides: [4, 3] } satisfies FixtureAttempt['retention']; // 60/80
const R90 = { controls: [60, 54], preservation: [16, 14], overrides: [4, 4] } satisfies FixtureAttempt['retention']; // 72/80
const R50 = { controls: [60, 30], preservation: [16, 8], overrides: [4, 2] } satisfies FixtureAttempt['retention']; // 40/80
const NO_SPILLOVER_ITEMS = {
  controls: [60, 48],
  preservation: [0, 0],
  overrides: [4, 4],
} satisfies FixtureAttempt['retention']; // 52/64

export const GRID: FixtureAttempt[] = [
  { editor: 'alpha', family: 'alias_acquisition', seed: 3, targets: { base: 0, edited: 12 }, retention: FULL }, // 0.5 × 1 = 0.5
  { editor: 'alpha', family: 'alias_acquisition', seed: 7, targets: { base: 0, edited: 6 }, retention: R75 }, // 0.25 × 0.75 = 0.1875
  { editor: 'alpha', family: 'lexical_inhibition', seed: 3, targets: { base: 4, edited: 14 }, retention: R90 }, // 0.5 × 0.9 = 0.45
  { editor: 'alpha', family: 'lexical_inhibition', seed: 7, targets: { base: 4, edited: 4 }, retention: FULL }, // 0 × 1 = 0
  { editor: 'alpha', family: 'local_factual_update', seed: 3, targets: { base: 0, edited: 24 }, retention: R50 }, // 1 × 0.5 = 0.5
  { editor: 'alpha', family: 'local_factual_update', seed: 7, targets: { base: 0, edited: 18 }, retention: FULL }, // 0.75 × 1 = 0.75
  { editor: 'beta', family: 'alias_acquisition', seed: 3, targets: { base: 0, edited: 3 }, retention: FULL }, // 0.125 × 1 = 0.125
  { editor: 'beta', family: 'alias_acquisition', seed: 7, targets: { base: 0, edited: 0 }, retention: FULL }, // 0 × 1 = 0
  {
    editor: 'beta',
    family: 'lexical_inhibition',
    seed: 3,
    targets: { base: 0, edited: 12 },
    retention: NO_SPILLOVER_ITEMS,
  }, // 0.5 × 0.8125 = 0.40625
  { editor: 'beta', family: 'lexical_inhibition', seed: 7, targets: { base: 12, edited: 18 }, retention: R75 }, // 0.5 × 0.75 = 0.375
  { editor: 'beta', family: 'local_factual_update', seed: 3, targets: { base: 0, edited: 6 }, retention: R50 }, // 0.25 × 0.5 = 0.125
  { editor: 'beta', family: 'local_factual_update', seed: 7, targets: { base: 6, edited: 24 }, retention: R90 }, // 1 × 0.9 = 0.9
];

/** The grid written as two pilot runs, one per editor; returns the two RUNS folders. */
export function writeGrid(root: string): { alpha: string; beta: string } {
  const runs = { alpha: path.join(root, 'runs-alpha'), beta: path.join(root, 'runs-beta') };
  writeRuns(
    runs.alpha,
    GRID.filter((a) => a.editor === 'alpha'),
  );
  writeRuns(
    runs.beta,
    GRID.filter((a) => a.editor === 'beta'),
  );
  return runs;
}

/** A trace.jsonl shaped as a built-in editor writes it (no model requests): a brief, then `calls` tool calls. */
export function writeToolTrace(
  dir: string,
  calls: number,
  args: (i: number) => string,
  output: (i: number) => string,
): void {
  const lines: TraceLine[] = [
    { type: 'brief', brief: { objective: { text: OBJECTIVE, structured: {} }, practice: [] } },
    { type: 'turn', turn: 1 },
  ];
  for (let i = 0; i < calls; i++)
    lines.push({
      type: 'tool',
      turn: 1,
      call_id: `builtin-${i}`,
      name: 'inspect_target',
      arguments: args(i),
      duration_ms: 7,
      ok: true,
      output: output(i),
    });
  lines.push({ type: 'stop', reason: 'final_reply' });
  const time = '2026-03-01T00:00:00.000Z';
  writeFileSync(path.join(dir, 'trace.jsonl'), lines.map((l) => JSON.stringify({ time, ...l })).join('\n') + '\n');
}
