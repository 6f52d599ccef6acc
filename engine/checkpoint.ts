// A pinned Gemma 3 checkpoint on disk: config.json, tokenizer files and (sharded) safetensors.
// Accepts a plain folder or the Hugging Face cache layout models--org--name/snapshots/<revision>/ (files linked into
// blobs/, refs/main naming a revision, several revisions side by side).
// Nothing is downloaded here (hub/fetch.ts fetches into the cache; the commands call it first); every tensor the text
// decoder needs is checked for presence, shape and dtype at open.
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseGemma3Config, type Gemma3TextConfig } from './config.ts';
import { bf16ToF32, f16ToF32 } from './bf16.ts';
import { SafetensorsFile, SafetensorsError, numel, type TensorInfo } from './safetensors.ts';
import { expectedTextTensors, tiedAliases } from './names.ts';
import { snapshotStatus } from './hub/files.ts';

export class CheckpointError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckpointError';
  }
}

export type CheckpointLocation = {
  /** A checkpoint folder, or a Hugging Face cache repo folder (models--org--name). */
  modelDir?: string;
  /** Hugging Face cache root holding models--org--name/; default: defaultCacheDir(). Used when `modelId` is given. */
  cacheDir?: string;
  modelId?: string;
  /** A snapshot's commit hash or a ref name (refs/<name>); default: the pinned revision of a pinned id, else refs/main. */
  revision?: string;
  /** Accept a revision of a pinned id other than the pinned one. */
  allowUnpinnedRevision?: boolean;
};

/** The project's pinned targets (README, "Pinned targets"). */
export const PINNED_REVISIONS: Readonly<Record<string, string>> = {
  'google/gemma-3-1b-it': 'dcc83ea841ab6100d6b47a070329e1ba4cf78752',
  'google/gemma-3-4b-it': '093f9f388b31de276ce2de164bdc2081324b9767',
};

/**
 * Where huggingface_hub keeps its cache: $HF_HUB_CACHE (or its older name $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub,
 * else ~/.cache/huggingface/hub.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HUGGINGFACE_HUB_CACHE) return env.HUGGINGFACE_HUB_CACHE;
  if (env.HF_HOME) return path.join(env.HF_HOME, 'hub');
  return path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'huggingface', 'hub');
}

/** Resolve a location to the folder holding config.json, and the snapshot's commit hash in a cache. */
export function resolveCheckpointDir(location: CheckpointLocation): {
  dir: string;
  revision?: string;
  modelId?: string;
} {
  const { modelDir, modelId } = location;
  if (!modelDir) {
    if (!modelId)
      throw new CheckpointError(
        'no checkpoint given: pass --model ID (found in the Hugging Face cache) or --model-dir DIR',
      );
    const cacheDir = location.cacheDir ?? defaultCacheDir();
    const repoDir = path.join(cacheDir, `models--${modelId.replaceAll('/', '--')}`);
    if (!existsSync(repoDir)) {
      throw new CheckpointError(
        `${modelId} is not in the Hugging Face cache ${cacheDir} (no ${path.basename(repoDir)}/; fetch it with ${downloadCommand(modelId, location.revision)}, or pass --cache-dir or --model-dir)`,
      );
    }
    return { ...snapshot(repoDir, modelId, location), modelId };
  }
  if (!existsSync(modelDir)) throw new CheckpointError(`checkpoint folder ${modelDir} does not exist`);
  if (existsSync(path.join(modelDir, 'snapshots'))) {
    const id = modelId ?? repoModelId(modelDir);
    return { ...snapshot(modelDir, id, location), modelId: id };
  }
  return { dir: modelDir, revision: location.revision };
}

/** The command that fetches a checkpoint into the cache (scripts/download.ts). */
function downloadCommand(modelId: string | undefined, revision: string | undefined): string {
  return `npx iwibench download --model ${modelId ?? 'ID'}${revision ? ` --revision ${revision}` : ''}`;
}

/** `models--google--gemma-3-1b-it` → `google/gemma-3-1b-it`. */
function repoModelId(repoDir: string): string | undefined {
  const match = /^models--(.+?)--(.+)$/.exec(path.basename(path.resolve(repoDir)));
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/** The snapshot of a cache repo folder: the revision asked for (a hash or a ref), the pinned one, or refs/main. */
function snapshot(
  repoDir: string,
  modelId: string | undefined,
  location: CheckpointLocation,
): { dir: string; revision: string } {
  const pinned = modelId ? PINNED_REVISIONS[modelId] : undefined;
  const snapshots = path.join(repoDir, 'snapshots');
  const have = existsSync(snapshots) ? readdirSync(snapshots).sort() : [];
  const refs = existsSync(path.join(repoDir, 'refs')) ? readdirSync(path.join(repoDir, 'refs')).sort() : [];
  const present = () =>
    `have: ${have.join(', ') || 'no snapshots'}${refs.length > 0 ? `; refs: ${refs.join(', ')}` : ''}`;
  let revision = location.revision ?? pinned;
  if (revision === undefined) {
    if (!refs.includes('main'))
      throw new CheckpointError(`${repoDir} has no refs/main: pass --revision (${present()})`);
    revision = 'main';
  }
  const refFile = path.join(repoDir, 'refs', revision);
  if (!/^[0-9a-f]{40}$/.test(revision) && refs.includes(revision)) revision = readFileSync(refFile, 'utf8').trim();
  const dir = path.join(snapshots, revision);
  if (!existsSync(dir))
    throw new CheckpointError(
      `revision ${revision} is not in ${repoDir}/snapshots (${present()}); fetch it with ${downloadCommand(modelId, location.revision)}`,
    );
  if (pinned && revision !== pinned && !location.allowUnpinnedRevision) {
    throw new CheckpointError(
      `${modelId} is pinned at revision ${pinned}; ${revision} is refused unless --allow-unpinned-revision is given`,
    );
  }
  const { complete, missing } = snapshotStatus(dir);
  if (!complete)
    throw new CheckpointError(
      `${dir} is incomplete (an interrupted download?): missing ${missing.join(', ')}; ${downloadCommand(modelId, location.revision)} completes it`,
    );
  return { dir, revision };
}

export class Checkpoint {
  private constructor(
    readonly dir: string,
    readonly modelId: string,
    readonly revision: string,
    readonly rawConfig: Record<string, unknown>,
    readonly config: Gemma3TextConfig,
    private readonly files: SafetensorsFile[],
    readonly tensors: ReadonlyMap<string, TensorInfo>,
  ) {}

  static open(location: CheckpointLocation | string): Checkpoint {
    const loc = typeof location === 'string' ? { modelDir: location } : location;
    const { dir, revision, modelId: cachedId } = resolveCheckpointDir(loc);
    const configPath = path.join(dir, 'config.json');
    if (!existsSync(configPath)) throw new CheckpointError(`${configPath} is missing`);
    let rawConfig: Record<string, unknown>;
    try {
      rawConfig = JSON.parse(readFileSync(configPath, 'utf8'));
    } catch (error) {
      throw new CheckpointError(`${configPath} is not valid JSON: ${(error as Error).message}`);
    }
    const config = parseGemma3Config(rawConfig);
    const files = openShards(dir);
    try {
      const tensors = new Map<string, TensorInfo>();
      for (const file of files) {
        for (const [name, info] of file.tensors) {
          if (tensors.has(name))
            throw new CheckpointError(
              `tensor "${name}" appears in both ${path.basename(tensors.get(name)!.file)} and ${path.basename(file.file)}`,
            );
          tensors.set(name, info);
        }
      }
      validateTextTensors(config, tensors);
      for (const alias of Object.keys(tiedAliases(config))) tensors.delete(alias); // a stored tied head is ignored: it is embed_tokens
      const named =
        typeof rawConfig._name_or_path === 'string' && rawConfig._name_or_path ? rawConfig._name_or_path : undefined;
      const modelId = loc.modelId ?? cachedId ?? named ?? path.basename(path.resolve(dir));
      return new Checkpoint(path.resolve(dir), modelId, revision ?? 'local', rawConfig, config, files, tensors);
    } catch (error) {
      for (const file of files) file.close();
      throw error;
    }
  }

  info(name: string): TensorInfo {
    const info = this.tensors.get(name);
    if (!info) throw new CheckpointError(`no tensor named "${name}" in ${this.dir}`);
    return info;
  }

  /** Raw bytes of a tensor as stored (into `into`, of exactly the tensor's byte length, when given). */
  readBytes(name: string, into?: Uint8Array): Uint8Array {
    const info = this.info(name);
    return this.fileOf(info).readBytes(name, 0, undefined, into);
  }

  /** A tensor decoded to float32 (exact for BF16, F16 and F32). */
  readF32(name: string): Float32Array {
    const info = this.info(name);
    const bytes = this.readBytes(name);
    switch (info.dtype) {
      case 'BF16':
        return bf16ToF32(new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2));
      case 'F16':
        return f16ToF32(new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2));
      case 'F32':
        return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
      default:
        throw new CheckpointError(`tensor "${name}" has dtype ${info.dtype}; expected a float type`);
    }
  }

  close(): void {
    for (const file of this.files) file.close();
  }

  private fileOf(info: TensorInfo): SafetensorsFile {
    return this.files.find((f) => f.file === info.file)!;
  }
}

function openShards(dir: string): SafetensorsFile[] {
  const indexPath = path.join(dir, 'model.safetensors.index.json');
  let names: string[];
  if (existsSync(indexPath)) {
    let index: { weight_map?: Record<string, string> };
    try {
      index = JSON.parse(readFileSync(indexPath, 'utf8'));
    } catch (error) {
      throw new CheckpointError(`${indexPath} is not valid JSON: ${(error as Error).message}`);
    }
    if (!index.weight_map || typeof index.weight_map !== 'object')
      throw new CheckpointError(`${indexPath} has no weight_map`);
    names = [...new Set(Object.values(index.weight_map))].sort();
    const files = names.map((n) => openShard(path.join(dir, n)));
    // The index and the shards must agree tensor for tensor.
    for (const [tensor, shard] of Object.entries(index.weight_map)) {
      const file = files.find((f) => path.basename(f.file) === shard)!;
      if (!file.tensors.has(tensor)) {
        for (const f of files) f.close();
        throw new CheckpointError(`index maps tensor "${tensor}" to ${shard}, which does not hold it`);
      }
    }
    return files;
  }
  const single = path.join(dir, 'model.safetensors');
  assertLinkTarget(single);
  if (!existsSync(single))
    throw new CheckpointError(`${dir} has neither model.safetensors nor model.safetensors.index.json`);
  return [openShard(single)];
}

/** A cache snapshot's files are links into blobs/ (the reader opens the target); a dangling one is named. */
function assertLinkTarget(file: string): void {
  if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink() && !existsSync(file)) {
    throw new CheckpointError(`${file} links to ${readlinkSync(file)}, which is missing (an incomplete download?)`);
  }
}

function openShard(file: string): SafetensorsFile {
  assertLinkTarget(file);
  if (!existsSync(file) || !statSync(file).isFile()) throw new CheckpointError(`shard ${file} is missing`);
  try {
    return SafetensorsFile.open(file);
  } catch (error) {
    if (error instanceof SafetensorsError) throw new CheckpointError(`malformed safetensors file ${error.message}`);
    throw error;
  }
}

function validateTextTensors(config: Gemma3TextConfig, tensors: Map<string, TensorInfo>): void {
  const problems: string[] = [];
  for (const [name, shape] of expectedTextTensors(config)) {
    const info = tensors.get(name);
    if (!info) {
      problems.push(`missing tensor "${name}"`);
      continue;
    }
    if (info.shape.length !== shape.length || info.shape.some((d, i) => d !== shape[i])) {
      problems.push(
        `tensor "${name}" in ${path.basename(info.file)} has shape ${JSON.stringify(info.shape)}, config.json implies ${JSON.stringify(shape)}`,
      );
    }
    if (!['BF16', 'F16', 'F32'].includes(info.dtype))
      problems.push(`tensor "${name}" has dtype ${info.dtype}; expected BF16`);
    if (numel(info.shape) === 0) problems.push(`tensor "${name}" is empty`);
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, 20);
    if (problems.length > 20) shown.push(`… and ${problems.length - 20} more`);
    throw new CheckpointError(`checkpoint does not match its config.json:\n  - ${shown.join('\n  - ')}`);
  }
}
