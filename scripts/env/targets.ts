// The pinned targets on this machine: whether each is complete in the Hugging Face cache, and the memory and disk it
// needs against what is free. Memory: an evaluation process as the memory gate reserves it (service/evaluate.ts, 8
// rows in flight); a run holds the service and one evaluation process; `run-pilot --workers 2` a second evaluation
// (the gate runs it after the first where it does not fit). Disk: the checkpoint's safetensors (its tensors in BF16,
// vision tower included), counted from the preset of the same shapes, with nothing fetched to know it.
import { lstatSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import {
  PINNED_REVISIONS,
  numel,
  parseGemma3Config,
  presetConfig,
  presetShapes,
  repoFolder,
  snapshotStatus,
  textWeightBytes,
  type HubSettings,
  type Preset,
} from '../../engine/index.ts';
import { evaluationProcessBytes } from '../../service/evaluate.ts';
import { freeDisk, memory } from './machine.ts';

/** The preset of each pinned id's shapes (engine/tiny-checkpoint.ts). */
const SHAPES: Record<string, Preset> = {
  'google/gemma-3-1b-it': 'gemma-3-1b-shape',
  'google/gemma-3-4b-it': 'gemma-3-4b-shape',
};
const ROWS = 8;

/** Bytes of the files under a snapshot, the blobs its links name counted once each. */
function snapshotBytes(dir: string): number {
  let bytes = 0;
  for (const name of readdirSync(dir)) {
    const file = path.join(dir, name);
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat?.isFile()) bytes += stat.size;
    else if (lstatSync(file).isDirectory()) bytes += snapshotBytes(file);
  }
  return bytes;
}

/** Each pinned checkpoint in the cache: complete, incomplete (what is missing) or absent. */
export function cachedTargets(settings: HubSettings) {
  return Object.fromEntries(
    Object.entries(PINNED_REVISIONS).map(([id, revision]) => {
      const dir = path.join(repoFolder(settings.cacheDir, id), 'snapshots', revision);
      let state:
        { status: 'absent' } | { status: 'complete'; bytes: number } | { status: 'incomplete'; missing: string[] };
      try {
        const { complete, missing } = snapshotStatus(dir);
        const present = readdirSync(dir).length > 0;
        state = complete
          ? { status: 'complete', bytes: snapshotBytes(dir) }
          : present
            ? { status: 'incomplete', missing }
            : { status: 'absent' };
      } catch {
        state = { status: 'absent' };
      }
      return [id, { revision, dir, ...state }];
    }),
  );
}

/** What each pinned target needs, and whether this machine has it free. */
export function targetNeeds(settings: HubSettings, cached: ReturnType<typeof cachedTargets>) {
  const mem = memory();
  const usable = Math.min(mem.available, mem.cgroup_limit ?? Infinity);
  const disk = freeDisk(settings.cacheDir);
  return Object.fromEntries(
    Object.entries(SHAPES).map(([id, preset]) => {
      const config = parseGemma3Config(presetConfig(preset));
      const process = evaluationProcessBytes(config, ROWS);
      const { shapes, vision } = presetShapes(preset);
      const download = [...shapes.values(), ...vision.values()].reduce((sum, shape) => sum + 2 * numel(shape), 0);
      const toFetch = cached[id]?.status === 'complete' ? 0 : download;
      return [
        id,
        {
          weights: textWeightBytes(config),
          evaluation_process: process,
          run: 2 * process,
          run_two_evaluations: 3 * process,
          run_fits: 2 * process <= usable,
          two_evaluations_fit: 3 * process <= usable,
          download,
          to_fetch: toFetch,
          disk_fits: toFetch <= disk.free,
        },
      ];
    }),
  );
}
