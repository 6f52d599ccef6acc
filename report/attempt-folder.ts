// What an attempt folder holds besides results.json, read for the attempt's page: the native trace (trace.jsonl,
// taskset/harness/trace.ts), the harness's summary (editor.json), the pilot's status (attempt.json), the patch
// (patch/patch.json and the operand shapes in patch/patch.safetensors) and a replay's replay.json. Every one of
// them may be missing (a bare evaluate-patch has no trace, an interrupted attempt no attempt.json) or older or newer
// than this code: fields are read defensively, and what could not be read is listed as a problem on the page
// instead of failing the whole report.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SafetensorsFile } from '../engine/index.ts';
import type { ResultsFile } from '../taskset/index.ts';
import { TRACE_FILE, isObject, readTraceLines, type TraceLines } from './trace-file.ts';

export const REPLAY_FILE = 'replay.json';

export type PatchView = {
  /** The patch.json read, or null when there is none. */
  file: string | null;
  ops: Record<string, unknown>[];
  stats: {
    changed_parameters?: number;
    tensors: Record<string, { changed?: number; delta_frobenius?: number; relative_delta?: number | null }>;
  };
  createdBy: Record<string, unknown> | null;
  /** Array operands (`op<i>.<field>`) and their shapes, from the safetensors header. */
  operandShapes: Map<string, number[]>;
};

export type AttemptFiles = {
  dir: string;
  trace: TraceLines | null;
  editorJson: Record<string, unknown> | null;
  attemptJson: Record<string, unknown> | null;
  patch: PatchView | null;
  /** Tensor shapes from the brief's compact manifest (for slices and heat strips). */
  tensorShapes: Map<string, number[]>;
  /** Files that were there but could not be read, in words. */
  problems: string[];
};

export function readAttemptFolder(resultsFile: string, results: ResultsFile): AttemptFiles {
  const dir = path.dirname(resultsFile);
  const problems: string[] = [];
  const json = (name: string): Record<string, unknown> | null => {
    const file = path.join(dir, name);
    if (!existsSync(file)) return null;
    try {
      const value = JSON.parse(readFileSync(file, 'utf8'));
      return isObject(value) ? value : (problems.push(`${name} is not a JSON object`), null);
    } catch (error) {
      problems.push(`${name} is not readable as JSON: ${(error as Error).message}`);
      return null;
    }
  };
  const trace = readTrace(path.join(dir, TRACE_FILE), problems);
  const brief = trace?.entries.find((e) => e.type === 'brief')?.brief;
  return {
    dir,
    trace,
    editorJson: json('editor.json'),
    attemptJson: json('attempt.json'),
    patch: readPatch(dir, results, problems),
    tensorShapes: manifestShapes(isObject(brief) ? brief.manifest : undefined),
    problems,
  };
}

/** The trace's lines; one that is not an entry (a run killed mid-write) is a problem, not an error. */
function readTrace(file: string, problems: string[]): TraceLines | null {
  if (!existsSync(file)) return null;
  const trace = readTraceLines(file);
  for (const { line, error } of trace.skipped)
    problems.push(
      error === undefined
        ? `${TRACE_FILE} line ${line} has no "type"`
        : `${TRACE_FILE} line ${line} is not JSON (cut off?)`,
    );
  return trace;
}

/** The patch next to the results (the pilot copies it to <attempt>/patch), else where results.json says it is. */
function readPatch(dir: string, results: ResultsFile, problems: string[]): PatchView | null {
  if (!results.patch) return null;
  const candidates = [path.join(dir, 'patch'), results.patch.dir].filter((d): d is string => typeof d === 'string');
  const patchDir = candidates.find((d) => existsSync(path.join(d, 'patch.json')));
  const fromResults: PatchView = {
    file: null,
    ops: [],
    stats: {
      changed_parameters: results.patch.changed_parameters,
      tensors: results.patch.tensors as PatchView['stats']['tensors'],
    },
    createdBy: null,
    operandShapes: new Map(),
  };
  if (!patchDir) {
    problems.push(
      `no patch.json found (looked in ${candidates.join(', ')}): the ops are unknown, the statistics come from results.json`,
    );
    return fromResults;
  }
  const file = path.join(patchDir, 'patch.json');
  let json: Record<string, unknown>;
  try {
    const value = JSON.parse(readFileSync(file, 'utf8'));
    if (!isObject(value)) throw new Error('not a JSON object');
    json = value;
  } catch (error) {
    problems.push(`${file} is not readable: ${(error as Error).message}`);
    return fromResults;
  }
  const operandShapes = new Map<string, number[]>();
  const arrays = path.join(patchDir, 'patch.safetensors');
  if (existsSync(arrays)) {
    try {
      const st = SafetensorsFile.open(arrays);
      for (const [name, info] of st.tensors) operandShapes.set(name, info.shape);
      st.close();
    } catch (error) {
      problems.push(`${arrays} is not readable: ${(error as Error).message}`);
    }
  }
  const stats =
    isObject(json.stats) && isObject(json.stats.tensors) ? (json.stats as PatchView['stats']) : fromResults.stats;
  return {
    file,
    ops: Array.isArray(json.ops) ? json.ops.filter(isObject) : [],
    stats,
    createdBy: isObject(json.created_by) ? json.created_by : null,
    operandShapes,
  };
}

/**
 * Shapes from the compact manifest lines of the brief, e.g. `model.layers.{0..3}.mlp.down_proj.weight [128,256]
 * BF16 writable`; a `{a..b}` range stands for every layer in it.
 */
export function manifestShapes(manifest: unknown): Map<string, number[]> {
  const shapes = new Map<string, number[]>();
  if (!Array.isArray(manifest)) return shapes;
  for (const line of manifest) {
    const match = typeof line === 'string' ? /^(\S+) \[([\d,\s]*)\]/.exec(line) : null;
    if (!match) continue;
    const shape = match[2]!.trim() === '' ? [] : match[2]!.split(',').map(Number);
    const range = /\{(\d+)\.\.(\d+)\}/.exec(match[1]!);
    if (!range) shapes.set(match[1]!, shape);
    else
      for (let i = Number(range[1]); i <= Number(range[2]); i++)
        shapes.set(match[1]!.replace(range[0], String(i)), shape);
  }
  return shapes;
}

/** A replay's replay.json (scripts/replay-patch.ts), when the folder of a results.json has one. */
export type Replay = {
  original: string;
  control_seed: number;
  original_control_seed: number;
  new_controls: { items: number; base_correct: number; retained: number; retention: number | null };
  repeated_controls: { items: number; base_correct: number; retained: number; retention: number | null };
  original_reward: number;
  reward: number;
};

export function readReplay(resultsFile: string, results: ResultsFile): Replay | null {
  const file = path.join(path.dirname(resultsFile), REPLAY_FILE);
  if (!existsSync(file)) return null;
  const value = JSON.parse(readFileSync(file, 'utf8'));
  const part = (p: unknown) =>
    isObject(p) && typeof p.items === 'number' && typeof p.base_correct === 'number' && typeof p.retained === 'number'
      ? p
      : undefined;
  if (
    !isObject(value) ||
    typeof value.original !== 'string' ||
    !part(value.new_controls) ||
    !part(value.repeated_controls)
  ) {
    throw new Error(`${file} is not a replay-patch replay.json (needs original, new_controls and repeated_controls)`);
  }
  return {
    original: value.original,
    control_seed: Number(value.control_seed),
    original_control_seed: Number(value.original_control_seed),
    new_controls: value.new_controls as Replay['new_controls'],
    repeated_controls: value.repeated_controls as Replay['repeated_controls'],
    original_reward: Number(value.original_reward),
    reward: results.score.reward,
  };
}
