// The pinned checkpoint fetched into the Hugging Face cache as huggingface_hub lays it out, so that the Python tools
// share it and engine/checkpoint.ts opens it unchanged:
//   models--org--name/blobs/<etag>               each file once (etag: an LFS file's SHA-256, else its git oid)
//   models--org--name/snapshots/<commit>/<file>  a relative link to its blob
//   models--org--name/refs/<name>                the commit a branch or tag was at (only when one was asked for)
// A snapshot the engine can open is used as it is, without the network; otherwise the commit's files the engine
// needs (files.ts) are listed, the free disk checked against what is missing, and each blob fetched (transfer.ts),
// small files first, under a lock per blob (lock.ts), then linked.
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, statfsSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../../core/files.ts';
import { PINNED_REVISIONS } from '../checkpoint.ts';
import { hubClient, type HubClient, type RepoFile } from './client.ts';
import { HubError, networkCause, type ErrorContext } from './errors.ts';
import { INDEX_FILE, SINGLE_WEIGHTS, isWanted, repoFolder, shardsOf, snapshotStatus } from './files.ts';
import { withBlobLock } from './lock.ts';
import { hubSettings, type HubSettings } from './settings.ts';
import { DigestMismatch, TransferDropped, partialPath, transferBlob } from './transfer.ts';

export type FetchOptions = {
  modelId: string;
  /** A commit, branch or tag; default: the pinned revision of a pinned id, else main. */
  revision?: string;
  /** The cache root (--cache-dir); default: the environment's (settings.ts). */
  cacheDir?: string;
  /** Fetch a pinned id at another revision (the commands that run refuse it otherwise, before fetching anything). */
  allowUnpinnedRevision?: boolean;
  env?: NodeJS.ProcessEnv;
  onEvent?: (event: FetchEvent) => void;
  /** Tries after the first when a file's connection drops (default 5, as huggingface_hub). */
  retries?: number;
  /** The wait before the first retry, doubling after each (default 1 s). */
  retryDelayMs?: number;
};

export type FetchEvent =
  /** What will be fetched: `bytes` of `files`, `present` files already in the cache. */
  | { type: 'plan'; modelId: string; commit: string; files: number; bytes: number; present: number }
  | { type: 'file'; path: string; size: number; from: number }
  | { type: 'bytes'; path: string; bytes: number }
  | { type: 'verify'; path: string }
  | { type: 'retry'; path: string; from: number; reason: string }
  /** A blob that failed its checksum, removed, about to be fetched again. */
  | { type: 'checksum'; path: string; got: string; expected: string }
  /** Another process of this machine is fetching the same blob. */
  | { type: 'wait'; path: string }
  /** The Hub could not be reached for a ref: the cache's snapshot of it is used. */
  | { type: 'cached'; commit: string; reason: string };

export type FetchResult = {
  modelId: string;
  commit: string;
  /** The snapshot folder (what Checkpoint.open opens). */
  dir: string;
  /** The files fetched now (empty: the snapshot was complete). */
  fetched: string[];
  fetchedBytes: number;
};

const COMMIT = /^[0-9a-f]{40}$/;

/** Fetches what the snapshot of `modelId` at `revision` lacks; returns at once, offline, when nothing is missing. */
export async function fetchCheckpoint(options: FetchOptions): Promise<FetchResult> {
  const { modelId, onEvent = () => {} } = options;
  const settings = hubSettings(options.env, options.cacheDir);
  const pinned = PINNED_REVISIONS[modelId];
  const revision = options.revision ?? pinned ?? 'main';
  const repoDir = repoFolder(settings.cacheDir, modelId);
  const context: ErrorContext = { modelId, revision, endpoint: settings.endpoint, tokenSource: settings.tokenSource };
  const checkPin = (commit: string) => {
    if (pinned && commit !== pinned && !options.allowUnpinnedRevision)
      throw new HubError(
        'pinned',
        `${modelId} is pinned at revision ${pinned}; ${commit} is refused unless --allow-unpinned-revision is given`,
      );
  };
  const done = (commit: string): FetchResult => ({
    modelId,
    commit,
    dir: path.join(repoDir, 'snapshots', commit),
    fetched: [],
    fetchedBytes: 0,
  });
  const complete = (commit: string | undefined) =>
    commit !== undefined && snapshotStatus(path.join(repoDir, 'snapshots', commit)).complete;
  const cachedRef = () => {
    const file = path.join(repoDir, 'refs', revision);
    return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
  };

  if (COMMIT.test(revision)) {
    checkPin(revision);
    if (complete(revision)) return done(revision);
  }
  if (settings.offline) {
    const commit = COMMIT.test(revision) ? revision : cachedRef();
    if (commit && complete(commit)) return done(commit);
    throw new HubError(
      'offline',
      `HF_HUB_OFFLINE is set, so nothing is fetched, and ${modelId} at ${revision} is not complete in ${settings.cacheDir}: unset HF_HUB_OFFLINE, or run npx iwibench download --model ${modelId}${options.revision ? ` --revision ${revision}` : ''} on a machine with the network and copy the cache`,
    );
  }

  const retryDelayMs = options.retryDelayMs ?? 1000;
  const client = await hubClient(settings, context, retryDelayMs);
  let commit: string;
  try {
    commit = COMMIT.test(revision) ? revision : await client.resolve(revision);
  } catch (error) {
    // A branch or tag needs the Hub; where it cannot tell (unreachable, or refusing: a model only this cache has),
    // the cache's last snapshot of it will do, as huggingface_hub falls back to it.
    const cached = cachedRef();
    if (error instanceof HubError && complete(cached)) {
      onEvent({ type: 'cached', commit: cached!, reason: error.message });
      checkPin(cached!);
      return done(cached!);
    }
    throw error;
  }
  checkPin(commit);
  const job: Job = { client, repoDir, commit, context, settings, options, onEvent };
  const result = complete(commit) ? done(commit) : { ...done(commit), ...(await fetchSnapshot(job)) };
  if (revision !== commit) writeFileAtomic(path.join(repoDir, 'refs', revision), commit); // no newline, as huggingface_hub
  return result;
}

/** One fetch: where, what, and how it reports. */
type Job = {
  client: HubClient;
  repoDir: string;
  commit: string;
  context: ErrorContext;
  settings: HubSettings;
  options: FetchOptions;
  onEvent: (event: FetchEvent) => void;
};

async function fetchSnapshot(job: Job): Promise<{ fetched: string[]; fetchedBytes: number }> {
  const { client, repoDir, commit, context, onEvent } = job;
  const listed = (await client.list(commit)).filter((file) => isWanted(file.path));
  const has = (name: string) => listed.some((file) => file.path === name);
  if (!has('config.json') || !(has(INDEX_FILE) || has(SINGLE_WEIGHTS)))
    throw new HubError(
      'not-a-checkpoint',
      `${context.modelId} at ${commit} has no config.json with ${SINGLE_WEIGHTS} or ${INDEX_FILE}: not a checkpoint the engine opens`,
    );
  const snapshot = path.join(repoDir, 'snapshots', commit);
  const blobOf = (file: RepoFile) => path.join(repoDir, 'blobs', file.etag);
  const linked = (file: RepoFile) => existsSync(path.join(snapshot, file.path));
  const missing = listed.filter((file) => !linked(file));
  const toFetch = missing.filter((file) => !existsSync(blobOf(file)));
  const partial = (file: RepoFile) => statSync(partialPath(blobOf(file)), { throwIfNoEntry: false })?.size ?? 0;
  const bytes = toFetch.reduce((sum, file) => sum + Math.max(0, file.size - partial(file)), 0);
  checkDisk(repoDir, bytes, toFetch.length, context.modelId);
  onEvent({
    type: 'plan',
    modelId: context.modelId,
    commit,
    files: missing.length,
    bytes,
    present: listed.length - missing.length,
  });

  // Small files first, so the index (which names the shards the engine opens) is read before any shard is fetched.
  const weights = (file: RepoFile) => file.path.endsWith('.safetensors');
  const order = [...missing.filter((f) => !weights(f)).sort((a, b) => a.size - b.size), ...missing.filter(weights)];
  const fetched: string[] = [];
  let fetchedBytes = 0;
  for (const file of order) {
    if (weights(file) && existsSync(path.join(snapshot, INDEX_FILE))) {
      const shards = shardsOf(readFileSync(path.join(snapshot, INDEX_FILE), 'utf8'), INDEX_FILE);
      if (!shards.includes(file.path)) continue; // a weights file the index does not name: not opened
    }
    const blob = blobOf(file);
    await withBlobLock(
      blob,
      () => onEvent({ type: 'wait', path: file.path }),
      async () => {
        if (existsSync(blob)) return; // fetched meanwhile (by the process we waited for), or by the Python tools
        await fetchBlob(job, blob, file);
        fetched.push(file.path);
        fetchedBytes += file.size;
      },
    );
    link(path.join(snapshot, file.path), blob);
  }
  return { fetched, fetchedBytes };
}

/** One blob, fetched again once from scratch when its checksum fails (the failed one removed). */
async function fetchBlob(job: Job, blob: string, file: RepoFile): Promise<void> {
  const { client, commit, context, settings, options, onEvent } = job;
  const where = `${file.path} of ${context.modelId}`;
  for (let tries = 1; ; tries++) {
    const from = statSync(partialPath(blob), { throwIfNoEntry: false })?.size ?? 0;
    onEvent({ type: 'file', path: file.path, size: file.size, from: Math.min(from, file.size) });
    try {
      await transferBlob(blob, file.size, file.digest, client.source(file.path, commit), {
        retries: options.retries ?? 5,
        retryDelayMs: options.retryDelayMs ?? 1000,
        stallTimeoutMs: settings.stallTimeoutMs,
        onBytes: (bytes) => onEvent({ type: 'bytes', path: file.path, bytes }),
        onVerify: () => onEvent({ type: 'verify', path: file.path }),
        onRetry: (at, reason) => onEvent({ type: 'retry', path: file.path, from: at, reason }),
      });
      return;
    } catch (error) {
      if (error instanceof DigestMismatch) {
        if (tries === 1) {
          onEvent({ type: 'checksum', path: file.path, got: error.got, expected: error.expected });
          continue;
        }
        throw new HubError(
          'checksum',
          `${where} failed its ${file.digest.algorithm === 'sha256' ? 'SHA-256' : 'git SHA-1'} check twice (got ${error.got}, the Hub lists ${error.expected}) and was removed: something between this machine and ${context.endpoint} alters it (a proxy, a mirror in HF_ENDPOINT); fix that, then run again`,
        );
      }
      if (error instanceof TransferDropped)
        throw new HubError(
          'network',
          `the connection to ${context.endpoint} dropped ${error.failures} times in a row while fetching ${where} (${networkCause(error.cause)}); ${bytesText(error.kept)} of ${bytesText(file.size)} are kept: run again to resume`,
        );
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC')
        throw new HubError(
          'disk-full',
          `the disk of ${settings.cacheDir} filled up while fetching ${where} (what was fetched is kept): free space there, or set HF_HUB_CACHE (or --cache-dir) to a larger disk, then run again to resume`,
        );
      throw client.explain(error);
    }
  }
}

/** snapshots/<commit>/<file> → ../../blobs/<etag>, replaced atomically (another process may link it too). */
function link(file: string, blob: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  symlinkSync(path.relative(path.dirname(file), blob), temp);
  renameSync(temp, file);
}

/** Refuses to start when the disk holding the cache has less free space than the bytes to fetch. */
function checkDisk(repoDir: string, bytes: number, files: number, modelId: string): void {
  if (bytes === 0) return;
  let dir = repoDir;
  while (!existsSync(dir)) dir = path.dirname(dir);
  const { bavail, bsize } = statfsSync(dir);
  const free = bavail * bsize;
  if (free < bytes)
    throw new HubError(
      'disk-full',
      `${modelId} needs ${bytesText(bytes)} free for ${files} file${files === 1 ? '' : 's'} in ${path.dirname(repoDir)}, and its disk has ${bytesText(free)}: free space there, or set HF_HUB_CACHE (or --cache-dir) to a larger disk`,
    );
}

/** Bytes as the Hub shows them (powers of 1000): `2.00 GB`, `812 kB`. */
export function bytesText(bytes: number): string {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : value < 100 ? 1 : 0)} ${units[unit]}`;
}
