// Finding and checking the results.json files of one or more run folders, and naming each attempt's editor.
// Only the fields the report reads are checked (items are left alone): a file that is not JSON, has another
// format, or lacks a field is an error naming the file and every problem at once.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import type { ResultsFile } from '../taskset/index.ts';

export const RESULTS_FILE = 'results.json';
/** evaluation.ts's RESULTS_FORMAT, typed so that tsc fails if they part; importing it would load the whole scorer. */
const RESULTS_FORMAT: ResultsFile['format'] = 'iwibench-results/1';

/** One results.json: where it was found and what it says. */
export type Collected = {
  /** The path as reached from the RUNS folder given (RUNS joined with the path inside it). */
  file: string;
  /** The name of the folder holding results.json: the pilot's attempt id. */
  attempt: string;
  results: ResultsFile;
};

/** An attempt with the editor label the report uses for it. */
export type LabelledAttempt = Collected & { editor: string };

const rate = { type: 'number', minimum: 0, maximum: 1 };
const rateOrNull = { type: ['number', 'null'], minimum: 0, maximum: 1 };
const count = { type: 'integer', minimum: 0 };
const RESULTS_SCHEMA = {
  type: 'object',
  required: ['format', 'versions', 'args', 'episode', 'editor', 'patch', 'score', 'resources', 'created_at'],
  properties: {
    format: { const: RESULTS_FORMAT },
    versions: {
      type: 'object',
      required: ['package', 'family_version', 'model_id', 'revision'],
      properties: {
        package: { type: 'string' },
        family_version: { type: 'string' },
        model_id: { type: 'string' },
        revision: { type: 'string' },
      },
    },
    args: { type: 'object' },
    episode: {
      type: 'object',
      required: ['family', 'seed', 'control_seed', 'params_key'],
      properties: {
        family: { type: 'string', minLength: 1 },
        seed: count,
        control_seed: count,
        params_key: { type: 'string' },
      },
    },
    editor: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['label'],
          properties: { label: { type: 'string', minLength: 1 }, model: { type: 'string' } },
        },
      ],
    },
    patch: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['changed_parameters', 'tensors', 'ops'],
          properties: {
            changed_parameters: count,
            ops: count,
            tensors: {
              type: 'object',
              additionalProperties: {
                type: 'object',
                required: ['changed', 'delta_frobenius', 'relative_delta'],
                properties: {
                  changed: count,
                  delta_frobenius: { type: 'number', minimum: 0 },
                  relative_delta: { type: ['number', 'null'], minimum: 0 },
                },
              },
            },
          },
        },
      ],
    },
    score: {
      type: 'object',
      required: ['targetSuccess', 'gain', 'retention', 'reward'],
      properties: {
        targetSuccess: { type: 'object', required: ['base', 'edited'], properties: { base: rate, edited: rate } },
        gain: rate,
        retention: {
          type: 'object',
          required: ['overall', 'generalControls', 'spillover', 'overrides'],
          properties: { overall: rate, generalControls: rateOrNull, spillover: rateOrNull, overrides: rateOrNull },
        },
        reward: rate,
      },
    },
    resources: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          required: ['turns', 'tool_calls', 'forward_tokens'],
          properties: { turns: count, tool_calls: count, forward_tokens: count },
        },
      ],
    },
    created_at: { type: 'string' },
  },
};
const validateResults = new Ajv({ allErrors: true, allowUnionTypes: true }).compile(RESULTS_SCHEMA);

/** Every results.json under the given folders, in a fixed order (folder as given, then path inside it). */
export function collectResults(runs: readonly string[]): Collected[] {
  if (runs.length === 0) throw new Error('no RUNS folder given');
  const collected: Collected[] = [];
  for (const root of runs) {
    let isDir: boolean;
    try {
      isDir = statSync(root).isDirectory();
    } catch {
      throw new Error(`RUNS folder ${root} does not exist`);
    }
    if (!isDir) throw new Error(`RUNS folder ${root} is not a folder`);
    const files = findFiles(root, RESULTS_FILE);
    if (files.length === 0) throw new Error(`RUNS folder ${root} holds no ${RESULTS_FILE}`);
    for (const file of files)
      collected.push({ file, attempt: path.basename(path.dirname(file)), results: readResults(file) });
  }
  return mergeAttempts(collected);
}

/**
 * Pilot attempts (`attempts/<id>/results.json`) merged by id across the folders given (queue workers on machines
 * without a shared disk each write their own): the same results in two folders are one attempt; two different
 * results for one id are refused, naming both files.
 */
function mergeAttempts(collected: Collected[]): Collected[] {
  const seen = new Map<string, { file: string; text: string }>();
  return collected.filter((c) => {
    if (path.basename(path.dirname(path.dirname(c.file))) !== 'attempts') return true;
    const text = readFileSync(c.file, 'utf8');
    const first = seen.get(c.attempt);
    if (!first) {
      seen.set(c.attempt, { file: c.file, text });
      return true;
    }
    if (first.text === text) return false;
    throw new Error(
      `attempt ${c.attempt} has two different results, ${first.file} and ${c.file}: keep one (an attempt is run once)`,
    );
  });
}

export function readResults(file: string): ResultsFile {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file} is not readable as JSON: ${(error as Error).message}`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (format !== RESULTS_FORMAT)
    throw new Error(`${file} has format ${JSON.stringify(format)}; the report reads "${RESULTS_FORMAT}" only`);
  if (!validateResults(json)) {
    const problems = (validateResults.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new Error(`${file} does not match ${RESULTS_FORMAT}: ${problems.join('; ')}`);
  }
  return json as ResultsFile;
}

/**
 * The editor label of each attempt. `editors` are the --editor values:
 * - none given: every attempt keeps its own label, and an unlabelled one is an error;
 * - given: labelled attempts are kept only when their label is one of them (the others are returned as skipped);
 *   unlabelled attempts (a bare `evaluate-patch`) take the label when exactly one is given, else it is an error.
 */
export function labelAttempts(
  collected: readonly Collected[],
  editors: readonly string[],
): { kept: LabelledAttempt[]; skipped: Collected[] } {
  const kept: LabelledAttempt[] = [];
  const skipped: Collected[] = [];
  for (const c of collected) {
    const own = c.results.editor?.label;
    if (own === undefined) {
      if (editors.length !== 1) {
        throw new Error(
          `${c.file} has no editor label: pass exactly one --editor LABEL to name it (given: ${editors.length === 0 ? 'none' : editors.join(', ')})`,
        );
      }
      kept.push({ ...c, editor: editors[0]! });
    } else if (editors.length === 0 || editors.includes(own)) kept.push({ ...c, editor: own });
    else skipped.push(c);
  }
  if (kept.length === 0)
    throw new Error(
      `no attempt has the editor label(s) ${editors.join(', ')}; found: ${[...new Set(collected.map((c) => c.results.editor?.label ?? '(none)'))].join(', ')}`,
    );
  return { kept, skipped };
}

const PARTIAL_FOLDER = /\.partial-\d+-[0-9a-f]+$/;

/** Files named `name` anywhere under `root`, sorted by path (code-unit order, not locale order). */
function findFiles(root: string, name: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => compare(a.name, b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        // A folder still being written (core/files.ts's writeFolderAtomic), or left half-written by a killed worker.
        if (!PARTIAL_FOLDER.test(entry.name)) walk(full);
      } else if (entry.isFile() && entry.name === name) found.push(full);
    }
  };
  walk(root);
  return found;
}

export const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
