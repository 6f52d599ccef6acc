// The speed probe's curve, kept per machine and model shape: the first evaluation process on a machine measures it
// (~30 s of decode steps at 1B on 2 cores), every later one reads it. Keyed by what sets a decode step's speed: the
// package's version and the engine's own code (a checkout's update changes the second only), Node and onnxruntime,
// the CPU, the kernel build, the engine's settings, the model's config (its shape, not its weights: a patch or a
// random checkpoint of the same shape runs as fast) and the probe's row counts and timing. A curve probed with fewer
// rows allowed than a process now has, where memory had stopped it, is measured again, further. A file that is not an
// entry of its key is measured over, never trusted. Outputs never depend on it: only the time.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type JSONSchemaType } from 'ajv';
import * as ort from 'onnxruntime-node';
import { writeJsonAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { PROBE_MAX_STEPS, PROBE_ROWS, PROBE_SECONDS, type SpeedPoint } from './batch-limit.ts';
import type { Gemma3TextConfig } from './config.ts';
import { arithmeticName } from './arithmetic.ts';
import { kernelInfo } from './kernels.ts';
import type { EngineSettings } from './settings.ts';

export const SPEED_CACHE_FORMAT = 'iwibench-speed-curve/1';

/**
 * Where measured speed curves are kept: $IWIBENCH_CACHE_DIR/speed, else $XDG_CACHE_HOME/iwibench/speed, else
 * ~/.cache/iwibench/speed.
 */
export function speedCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const root = env.IWIBENCH_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'iwibench');
  return path.join(root, 'speed');
}

const ENGINE_DIR = path.dirname(fileURLToPath(import.meta.url));
let ownCode: string | undefined;

/** SHA-256 of the engine's code in `dir`: its TypeScript files and the kernels' sources (native/*.cc and *.h). */
export function engineCodeDigest(dir: string): string {
  const hash = createHash('sha256');
  const native = existsSync(path.join(dir, 'native')) ? readdirSync(path.join(dir, 'native')) : [];
  const files = [
    ...readdirSync(dir).filter((name) => name.endsWith('.ts')),
    ...native.filter((name) => /\.(cc|h)$/.test(name)).map((name) => `native/${name}`),
  ].sort();
  for (const file of files) hash.update(`${file}\0`).update(readFileSync(path.join(dir, file)));
  return hash.digest('hex');
}

/** Everything a decode step's speed depends on, as an entry records it (its hash names the file). */
export function speedKey(config: Gemma3TextConfig, settings: EngineSettings): Record<string, unknown> {
  ownCode ??= engineCodeDigest(ENGINE_DIR);
  return {
    package: PACKAGE_VERSION,
    code: ownCode,
    node: process.version,
    onnxruntime: ort.env.versions.node,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.availableParallelism(),
    kernel: kernelInfo(),
    arithmetic: arithmeticName(settings.precision, settings.device),
    settings,
    config,
    probe: { rows: PROBE_ROWS, seconds: PROBE_SECONDS, max_steps: PROBE_MAX_STEPS },
  };
}

export type SpeedEntry = {
  format: typeof SPEED_CACHE_FORMAT;
  key: Record<string, unknown>;
  curve: SpeedPoint[];
  /** The rows the probe was allowed (the memory's bound then). */
  max_rows: number;
  measured_at: string;
};

// Checked against SpeedEntry by ajv's JSONSchemaType. Not TypeBox, as the service's schemas are: this file loads in
// every evaluation process, and TypeBox's 373 modules take ~0.5 s there under tsx's loader.
const SpeedEntrySchema: JSONSchemaType<SpeedEntry> = {
  type: 'object',
  required: ['format', 'key', 'curve', 'max_rows', 'measured_at'],
  properties: {
    format: { type: 'string', const: SPEED_CACHE_FORMAT },
    key: { type: 'object', required: [] },
    curve: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['rows', 'tokensPerSecond'],
        properties: { rows: { type: 'integer', minimum: 1 }, tokensPerSecond: { type: 'number', minimum: 0 } },
      },
    },
    max_rows: { type: 'integer', minimum: 1 },
    measured_at: { type: 'string' },
  },
};
const validateEntry = new Ajv({ strict: false }).compile(SpeedEntrySchema);

/**
 * Whether a curve the probe measured with `probedMaxRows` rows allowed holds all it would measure with `maxRows`: it
 * ran out of row counts or stopped at a fall of the speed (more memory changes neither), or the next row count fits
 * in neither.
 */
export function curveCovers(curve: SpeedPoint[], probedMaxRows: number, maxRows: number): boolean {
  const last = curve.at(-1);
  if (!last) return false;
  const next = PROBE_ROWS.find((rows) => rows > last.rows);
  return next === undefined || next <= probedMaxRows || next > maxRows;
}

/**
 * The speed curve for up to `maxRows` rows: the kept one where it covers them (its points past `maxRows` left out, as
 * the probe would not have measured them), else `probe(maxRows)`'s, then kept for the next process.
 */
export async function cachedSpeedCurve(
  key: Record<string, unknown>,
  maxRows: number,
  probe: (maxRows: number) => Promise<SpeedPoint[]>,
  dir: string = speedCacheDir(),
): Promise<{ curve: SpeedPoint[]; cached: boolean; file: string }> {
  const digest = createHash('sha256').update(JSON.stringify(key)).digest('hex').slice(0, 32);
  const file = path.join(dir, `${digest}.json`);
  const kept = readEntry(file, key);
  if (kept && curveCovers(kept.curve, kept.max_rows, maxRows))
    return { curve: kept.curve.filter((point) => point.rows <= maxRows), cached: true, file };
  const curve = await probe(maxRows);
  if (curve.length > 0) {
    const entry: SpeedEntry = {
      format: SPEED_CACHE_FORMAT,
      key,
      curve,
      max_rows: maxRows,
      measured_at: new Date().toISOString(),
    };
    // A cache that cannot be written (a read-only home) costs the next process a probe, not this evaluation.
    try {
      writeJsonAtomic(file, entry, false);
    } catch (error) {
      process.stderr.write(`iwibench: the speed curve is not kept (${(error as Error).message})\n`);
    }
  }
  return { curve, cached: false, file };
}

/** The entry in `file` if it is one and is this key's (a hash collision or a hand-edited file is measured over). */
function readEntry(file: string, key: Record<string, unknown>): SpeedEntry | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const data: unknown = JSON.parse(readFileSync(file, 'utf8'));
    if (!validateEntry(data)) return undefined;
    return JSON.stringify(data.key) === JSON.stringify(key) ? data : undefined;
  } catch {
    return undefined;
  }
}
