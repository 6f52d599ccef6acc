// The submitted artefact: a patch folder `iwibench-patch/2` with
//   patch.json         format, base {model_id, revision}, base_sha256 and result_sha256 of every touched tensor,
//                      the ordered ops (array operands as {"array": key}), stats
//   patch.safetensors  the array operands, F32, keyed `op<i>.<field>` (op3.u, op3.v, op0.values)
//   provenance.json    who made it (package, episode, family, seed, …): beside the patch, not part of its id,
//                      never verified, never used to decide anything
// The patch id is SHA-256(u64le(len(patch.json)) ‖ patch.json ‖ patch.safetensors): it depends only on the base
// and the ops, so the same edits give the same id in any episode. It is over the bytes, so a semantically equal
// reformatting of patch.json is a different id (and refused where the original id is asked for). Every use of a
// patch names the id it expects; loading recomputes the id from the bytes it then parses and refuses any other
// (PATCH_ID_MISMATCH). Format 1 (whose patch.json held the episode's provenance) is refused with a clear message.
//
// Operands are stored as F32 because that is what the live store computed with: inline numbers become float32
// when parsed and handles are float32 (inspection vectors are not BF16 values), and storing them as BF16 would change
// the result of low_rank_add. A tensor's SHA-256 is over its BF16 bytes, little-endian, in row-major order — the
// bytes a safetensors file stores, and the bytes the weight store holds.
//
// applyPatch replays the ops with the live store's own code (ops.ts through an EpisodeWeights) on the pristine
// checkpoint, after checking the base, and refuses the patch unless every recorded digest and stat is reproduced
// bit for bit.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv } from 'ajv';
import {
  bf16Value,
  type Checkpoint,
  parseSafetensors,
  type TensorToWrite,
  writeSafetensors,
} from '../../engine/index.ts';
import { IwiError } from '../../core/errors.ts';
import { writeFolderAtomic, writeJsonAtomic } from '../../core/files.ts';
import { PACKAGE_VERSION } from '../../core/version.ts';
import { checkFinite, parseWriteOp, type ArrayOperand, type WriteOp } from './ops.ts';
import { WeightStore, type EpisodeWeights } from './store.ts';

export const PATCH_FORMAT = 'iwibench-patch/2';
export const PATCH_JSON = 'patch.json';
export const PATCH_ARRAYS = 'patch.safetensors';
export const PATCH_PROVENANCE = 'provenance.json';

export type TensorStats = { changed: number; delta_frobenius: number; relative_delta: number | null };

export type PatchJson = {
  format: typeof PATCH_FORMAT;
  base: { model_id: string; revision: string };
  base_sha256: Record<string, string>;
  ops: Record<string, unknown>[];
  result_sha256: Record<string, string>;
  stats: { changed_parameters: number; tensors: Record<string, TensorStats> };
};

/** A patch folder and the id it must hold: how every use of a patch names it. */
export type PatchRef = { dir: string; id: string };

/** provenance.json: who made the patch of id `patch_id`. Unsigned: anyone can edit it, so nothing relies on it. */
export type Provenance = {
  patch_id: string;
  created_by: { package: string; package_version: string } & Record<string, unknown>;
};

// ---------------------------------------------------------------------------------------------------------------
// Writing

/**
 * Write an episode's ops as a patch folder, atomically (a temp folder renamed into place), with `createdBy` in its
 * provenance.json. Refuses an existing folder unless `overwrite`. Returns the patch and its digest (the id in
 * `<model>+patch:<sha256>`).
 */
export function writeEpisodePatch(
  episode: EpisodeWeights,
  dir: string,
  options: { createdBy?: Record<string, unknown>; overwrite?: boolean } = {},
): { dir: string; digest: string; patch: PatchJson; provenance: Provenance } {
  const target = path.resolve(dir);
  if (existsSync(target) && !options.overwrite)
    throw new IwiError('PATCH_EXISTS', `patch folder ${target} already exists`);
  const { checkpoint } = episode.store;
  const touched = episode.touchedTensors();
  const arrays: TensorToWrite[] = [];
  const patch: PatchJson = {
    format: PATCH_FORMAT,
    base: { model_id: checkpoint.modelId, revision: checkpoint.revision },
    base_sha256: Object.fromEntries(touched.map((name) => [name, bf16Sha256(episode.store.pristineBits(name))])),
    ops: episode.ops.map((op, i) => opToJson(op, i, arrays)),
    result_sha256: Object.fromEntries(touched.map((name) => [name, bf16Sha256(episode.bits(name))])),
    stats: tensorStats(
      touched,
      (name) => episode.store.pristineBits(name),
      (name) => episode.bits(name),
    ),
  };
  const provenance = writeFolderAtomic(target, (temp) => {
    writeSafetensors(path.join(temp, PATCH_ARRAYS), arrays, { format: PATCH_FORMAT });
    writeJsonAtomic(path.join(temp, PATCH_JSON), patch);
    const written: Provenance = {
      patch_id: patchDigest(temp),
      created_by: { ...options.createdBy, package: 'iwibench-ts', package_version: PACKAGE_VERSION },
    };
    writeJsonAtomic(path.join(temp, PATCH_PROVENANCE), written);
    return written;
  });
  return { dir: target, digest: provenance.patch_id, patch, provenance };
}

/** The array operands of an op move to patch.safetensors; the op keeps {"array": key}. */
function opToJson(op: WriteOp, index: number, arrays: TensorToWrite[]): Record<string, unknown> {
  const ref = (field: string, operand: ArrayOperand) => {
    const name = `op${index}.${field}`;
    arrays.push({ name, dtype: 'F32', shape: operand.shape, data: operand.data });
    return { array: name };
  };
  const head = { op: op.op, tensor: op.tensor, slice: op.slice };
  switch (op.op) {
    case 'replace':
      return { ...head, values: ref('values', op.values) };
    case 'fill':
      return { ...head, value: op.value };
    case 'scale':
      return { ...head, factor: op.factor };
    case 'copy':
      return { ...head, source: op.source };
    case 'low_rank_add':
      return { ...head, alpha: op.alpha, u: ref('u', op.u), v: ref('v', op.v) };
  }
}

/** Net change of each touched tensor against pristine: changed BF16 elements, ‖ΔW‖_F and ‖ΔW‖_F / ‖W‖_F. */
function tensorStats(
  touched: string[],
  pristine: (name: string) => Uint16Array,
  result: (name: string) => Uint16Array,
): PatchJson['stats'] {
  const tensors: Record<string, TensorStats> = {};
  let changedParameters = 0;
  for (const name of touched) {
    const before = pristine(name);
    const after = result(name);
    let changed = 0,
      deltaSquares = 0,
      baseSquares = 0;
    for (let i = 0; i < before.length; i++) {
      const b = bf16Value(before[i]!);
      baseSquares += b * b;
      if (before[i] === after[i]) continue;
      changed++;
      deltaSquares += (bf16Value(after[i]!) - b) ** 2;
    }
    const delta = Math.sqrt(deltaSquares);
    tensors[name] = {
      changed,
      delta_frobenius: delta,
      relative_delta: baseSquares > 0 ? delta / Math.sqrt(baseSquares) : null,
    };
    changedParameters += changed;
  }
  return { changed_parameters: changedParameters, tensors };
}

// ---------------------------------------------------------------------------------------------------------------
// Digests

/** SHA-256 (hex) of BF16 bits as a safetensors file stores them (little-endian, the byte order of every supported host). */
export function bf16Sha256(bits: Uint16Array): string {
  return createHash('sha256')
    .update(new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength))
    .digest('hex');
}

/** The id of the patch in a folder, from its files as they are now (see patchId). */
export function patchDigest(dir: string): string {
  return patchId(readPatchFile(dir, PATCH_JSON), readPatchFile(dir, PATCH_ARRAYS));
}

/**
 * A patch's id: SHA-256 over the 8-byte little-endian length of patch.json, patch.json, then patch.safetensors
 * (the length keeps the boundary between the two files unambiguous).
 */
export function patchId(json: Uint8Array, arrays: Uint8Array): string {
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  return createHash('sha256').update(length).update(json).update(arrays).digest('hex');
}

function readPatchFile(dir: string, name: string): Buffer {
  const file = path.join(dir, name);
  if (!existsSync(file)) throw new IwiError('PATCH_INVALID', `patch folder ${dir} has no ${name}`);
  return readFileSync(file);
}

// ---------------------------------------------------------------------------------------------------------------
// Reading and applying

/** A patch read from its folder; `id` is computed from the very bytes that `json` and `arrays` were parsed from. */
export type LoadedPatch = { dir: string; id: string; json: PatchJson; arrays: Map<string, ArrayOperand> };

const HEX64 = '^[0-9a-f]{64}$';
const digestMap = { type: 'object', additionalProperties: { type: 'string', pattern: HEX64 } };
const PATCH_SCHEMA = {
  type: 'object',
  required: ['format', 'base', 'base_sha256', 'ops', 'result_sha256', 'stats'],
  additionalProperties: false,
  properties: {
    format: { const: PATCH_FORMAT },
    base: {
      type: 'object',
      required: ['model_id', 'revision'],
      additionalProperties: false,
      properties: { model_id: { type: 'string' }, revision: { type: 'string' } },
    },
    base_sha256: digestMap,
    ops: { type: 'array', items: { type: 'object', required: ['op', 'tensor'] } },
    result_sha256: digestMap,
    stats: {
      type: 'object',
      required: ['changed_parameters', 'tensors'],
      additionalProperties: false,
      properties: {
        changed_parameters: { type: 'integer', minimum: 0 },
        tensors: {
          type: 'object',
          additionalProperties: {
            type: 'object',
            required: ['changed', 'delta_frobenius', 'relative_delta'],
            additionalProperties: false,
            properties: {
              changed: { type: 'integer', minimum: 0 },
              delta_frobenius: { type: 'number', minimum: 0 },
              relative_delta: { type: ['number', 'null'] },
            },
          },
        },
      },
    },
  },
};
const validatePatchJson = new Ajv({ allErrors: true }).compile(PATCH_SCHEMA);

/**
 * Read and structurally check the patch of id `expectedId` in a folder (id, format, schema, arrays); nothing about
 * the checkpoint yet. Both files are read once: the id is computed from those bytes and must equal `expectedId`
 * (PATCH_ID_MISMATCH), and only then are the same bytes parsed.
 */
export function loadPatch(dir: string, expectedId: string): LoadedPatch {
  const jsonBytes = readPatchFile(dir, PATCH_JSON);
  const arrayBytes = readPatchFile(dir, PATCH_ARRAYS);
  const id = patchId(jsonBytes, arrayBytes);
  if (id !== expectedId) {
    throw new IwiError(
      'PATCH_ID_MISMATCH',
      `patch folder ${dir} holds patch ${id} (SHA-256 of its ${PATCH_JSON} and ${PATCH_ARRAYS} as they are now), ` +
        `not the requested ${expectedId}: its files were changed or replaced`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(jsonBytes.toString('utf8'));
  } catch (error) {
    throw new IwiError('PATCH_INVALID', `${path.join(dir, PATCH_JSON)} is not valid JSON: ${(error as Error).message}`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (format === 'iwibench-patch/1') {
    throw new IwiError(
      'PATCH_INVALID',
      `${path.join(dir, PATCH_JSON)} is an iwibench-patch/1 patch, which this build no longer reads (its id covered the episode's provenance, ` +
        `so the same edits got different ids); write it again as ${PATCH_FORMAT} from the episode's op log with this build`,
    );
  }
  if (format !== PATCH_FORMAT) {
    throw new IwiError(
      'PATCH_INVALID',
      `${path.join(dir, PATCH_JSON)} has format ${JSON.stringify(format)}; this build reads "${PATCH_FORMAT}" only`,
    );
  }
  if (!validatePatchJson(json)) {
    const problems = (validatePatchJson.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
    throw new IwiError(
      'PATCH_INVALID',
      `${path.join(dir, PATCH_JSON)} does not match ${PATCH_FORMAT}: ${problems.join('; ')}`,
    );
  }
  const patch = json as PatchJson;

  let file: ReturnType<typeof parseSafetensors>;
  try {
    file = parseSafetensors(arrayBytes, path.join(dir, PATCH_ARRAYS));
  } catch (error) {
    throw new IwiError(
      'PATCH_INVALID',
      `${PATCH_ARRAYS} is unreadable (truncated or edited?): ${(error as Error).message}`,
    );
  }
  const referenced = new Set<string>();
  patch.ops.forEach((op) => {
    for (const value of Object.values(op)) {
      const key = (value as { array?: unknown } | null)?.array;
      if (typeof key === 'string') referenced.add(key);
    }
  });
  const arrays = new Map<string, ArrayOperand>();
  for (const [name, info] of file.tensors) {
    if (!referenced.has(name))
      throw new IwiError('PATCH_INVALID', `${PATCH_ARRAYS} holds array "${name}", which no op refers to`);
    if (info.dtype !== 'F32')
      throw new IwiError('PATCH_INVALID', `${PATCH_ARRAYS} array "${name}" is ${info.dtype}; operands are F32`);
    const bytes = new Uint8Array(arrayBytes.subarray(info.offset, info.offset + info.byteLength)); // a copy: 4-byte aligned
    arrays.set(
      name,
      checkPatchFinite({ shape: [...info.shape], data: new Float32Array(bytes.buffer, 0, bytes.length / 4) }, name),
    );
  }
  return { dir, id, json: patch, arrays };
}

function checkPatchFinite(operand: ArrayOperand, name: string): ArrayOperand {
  try {
    return checkFinite(operand, `${PATCH_ARRAYS} array "${name}"`);
  } catch (error) {
    throw new IwiError('PATCH_INVALID', (error as Error).message);
  }
}

export type ReplayedPatch = { patch: LoadedPatch; tensors: Map<string, Uint16Array>; ops: WriteOp[] };

/**
 * Verify a patch against a pristine checkpoint and replay it. Returns the patched tensors (BF16 bits, touched ones
 * only) and the loaded patch; throws PATCH_ID_MISMATCH (the folder does not hold patch `expectedId`), PATCH_INVALID,
 * PATCH_BASE_MISMATCH or PATCH_DIGEST_MISMATCH.
 */
export function replayPatch(checkpoint: Checkpoint, dir: string, expectedId: string): ReplayedPatch {
  const patch = loadPatch(dir, expectedId);
  const { json } = patch;
  if (json.base.model_id !== checkpoint.modelId || json.base.revision !== checkpoint.revision) {
    throw new IwiError(
      'PATCH_BASE_MISMATCH',
      `patch was made for ${json.base.model_id}@${json.base.revision}, the checkpoint is ${checkpoint.modelId}@${checkpoint.revision}`,
    );
  }
  const store = new WeightStore(checkpoint);
  const ops = json.ops.map((request, i) => {
    const resolve = (ref: unknown, what: string): ArrayOperand => {
      const key = (ref as { array?: unknown } | null)?.array;
      const operand = typeof key === 'string' ? patch.arrays.get(key) : undefined;
      if (!operand)
        throw new IwiError(
          'PATCH_INVALID',
          `${what} must be {"array": key} naming an array in ${PATCH_ARRAYS}, got ${JSON.stringify(ref)}`,
        );
      return operand;
    };
    return asPatchError(i, () => parseWriteOp(request, store.manifest, resolve));
  });

  const touched = [...new Set(ops.map((op) => op.tensor))];
  for (const [field, recorded] of [
    ['base_sha256', json.base_sha256],
    ['result_sha256', json.result_sha256],
    ['stats.tensors', json.stats.tensors],
  ] as const) {
    const keys = Object.keys(recorded).sort();
    if (keys.join('\n') !== [...touched].sort().join('\n')) {
      throw new IwiError(
        'PATCH_INVALID',
        `patch.json ${field} lists ${JSON.stringify(keys)}, but the ops touch ${JSON.stringify([...touched].sort())}`,
      );
    }
  }
  for (const name of touched) {
    const digest = createHash('sha256').update(checkpoint.readBytes(name)).digest('hex');
    if (digest !== json.base_sha256[name]) {
      throw new IwiError(
        'PATCH_BASE_MISMATCH',
        `base tensor "${name}" has SHA-256 ${digest}, the patch expects ${json.base_sha256[name]}: the checkpoint's weights differ from the patch's base`,
      );
    }
  }

  const episode = store.createEpisode('patch-replay');
  ops.forEach((op, i) => asPatchError(i, () => episode.apply(op)));
  const tensors = new Map(touched.map((name) => [name, episode.bits(name)]));
  for (const [name, bits] of tensors) {
    const digest = bf16Sha256(bits);
    if (digest !== json.result_sha256[name]) {
      throw new IwiError(
        'PATCH_DIGEST_MISMATCH',
        `replaying the patch gives "${name}" with SHA-256 ${digest}, the patch records ${json.result_sha256[name]}: its ops or operands were changed after it was written`,
      );
    }
  }
  const stats = tensorStats(
    touched,
    (name) => store.pristineBits(name),
    (name) => tensors.get(name)!,
  );
  for (const name of touched) {
    const [got, want] = [stats.tensors[name]!, json.stats.tensors[name]!];
    if (
      got.changed !== want.changed ||
      got.delta_frobenius !== want.delta_frobenius ||
      got.relative_delta !== want.relative_delta
    ) {
      throw new IwiError(
        'PATCH_INVALID',
        `patch.json stats of "${name}" are ${JSON.stringify(want)}, replaying gives ${JSON.stringify(got)}`,
      );
    }
  }
  if (stats.changed_parameters !== json.stats.changed_parameters) {
    throw new IwiError(
      'PATCH_INVALID',
      `patch.json stats.changed_parameters is ${json.stats.changed_parameters}, replaying gives ${stats.changed_parameters}`,
    );
  }
  return { patch, tensors, ops };
}

/**
 * Apply the patch of id `expectedId` to the pristine checkpoint: the patched BF16 tensors (touched ones only), its
 * id and every digest verified. An engine's WeightSource for the patched model is `overlaySource(pristine, …)`.
 */
export function applyPatch(checkpoint: Checkpoint, dir: string, expectedId: string): Map<string, Uint16Array> {
  return replayPatch(checkpoint, dir, expectedId).tensors;
}

/** A refused op makes the whole patch invalid; the op's own code stays in the message. */
function asPatchError<T>(index: number, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (!(error instanceof IwiError)) throw error;
    throw new IwiError(
      'PATCH_INVALID',
      `op ${index}: ${error.message}${error.code === 'PATCH_INVALID' ? '' : ` (${error.code})`}`,
    );
  }
}
