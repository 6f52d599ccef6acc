// One blob from the Hub into the cache: its bytes go to blobs/<etag>.incomplete (huggingface_hub's name for a partial
// blob), continuing from whatever an earlier try left there (an HTTP Range request), and the file is renamed to
// blobs/<etag> only once its length and digest are the Hub's: the SHA-256 of an LFS file (its oid), the git blob
// SHA-1 of a small one. So a partial or corrupt file never enters the cache; a corrupt one is removed.
import { createHash, type Hash } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeAll } from '../../core/files.ts';
import { StallError, isNetworkError, networkCause } from './errors.ts';

export type Digest = { algorithm: 'sha256' | 'git-sha1'; hex: string };

/** Where the bytes are: a URL and the headers to send (asked again before each try: a CDN's signed URL expires). */
export type Source = () => Promise<{ url: string; headers: Record<string, string> }>;

export type TransferOptions = {
  /** Tries after the first when the connection drops or stalls (huggingface_hub: 5). */
  retries: number;
  retryDelayMs: number;
  stallTimeoutMs: number;
  /** Bytes as they arrive (negative: a partial file the server made us drop). */
  onBytes: (bytes: number) => void;
  /** A dropped connection, about to be tried again from `from` bytes. */
  onRetry: (from: number, reason: string) => void;
  /** All bytes are there: the digest is being computed (seconds for gigabytes). */
  onVerify: () => void;
};

/** The blob's bytes did not match its digest (the file was removed). */
export class DigestMismatch extends Error {
  override name = 'DigestMismatch';
  constructor(
    readonly got: string,
    readonly expected: string,
  ) {
    super(`digest ${got}, expected ${expected}`);
  }
}

/** An HTTP status the transfer cannot go on from (the caller explains it with the Hub's headers). */
export class TransferRefused extends Error {
  override name = 'TransferRefused';
  constructor(
    readonly status: number,
    readonly url: string,
    readonly code: string | undefined,
    readonly hubMessage: string | undefined,
  ) {
    super(`HTTP ${status} for ${url}`);
  }
}

/** The download stopped for good (retries spent) with `kept` bytes in the partial file. */
export class TransferDropped extends Error {
  override name = 'TransferDropped';
  constructor(
    readonly kept: number,
    readonly failures: number,
    override readonly cause: unknown,
  ) {
    super(`the connection dropped ${failures} times in a row`);
  }
}

export function partialPath(blob: string): string {
  return `${blob}.incomplete`;
}

function sizeOf(file: string): number {
  return statSync(file, { throwIfNoEntry: false })?.size ?? 0;
}

function hasher(digest: Digest, size: number): Hash {
  if (digest.algorithm === 'sha256') return createHash('sha256');
  return createHash('sha1').update(`blob ${size}\0`); // git's object header: the oid of a file in the repository
}

/** The digest of a whole file, read from disk: what will enter the cache, whatever came over the wire. */
async function digestOf(file: string, digest: Digest, size: number): Promise<string> {
  const hash = hasher(digest, size);
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 22 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Appends the bytes from `from` on to the partial file; returns its length after. */
async function appendFrom(source: Source, partial: string, from: number, size: number, options: TransferOptions) {
  const { url, headers } = await source();
  const controller = new AbortController();
  const stall = setTimeout(() => controller.abort(new StallError(options.stallTimeoutMs)), options.stallTimeoutMs);
  try {
    const response = await fetch(url, {
      headers: from > 0 ? { ...headers, Range: `bytes=${from}-` } : headers,
      signal: controller.signal,
    });
    if (!response.ok)
      throw new TransferRefused(
        response.status,
        url,
        response.headers.get('x-error-code') ?? undefined,
        response.headers.get('x-error-message') ?? undefined,
      );
    // 206 from where we asked, or 200 (a server that ignores Range): the whole file, so the partial starts over.
    const range = /^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '');
    const start = response.status === 206 ? Number(range?.[1]) : 0;
    if (start !== 0 && start !== from) throw new Error(`${url} sent bytes from ${start} when asked from ${from}`);
    if (start === 0 && from > 0) options.onBytes(-from);
    mkdirSync(path.dirname(partial), { recursive: true }); // only now: a refused fetch leaves nothing behind
    // Written synchronously between reads, so no chunk waits in undici's queue: when the connection fails, every byte
    // it delivered is in the file (a failing fetch body drops what it still queues) and the next try resumes there.
    const fd = openSync(partial, start > 0 ? 'a' : 'w');
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        writeAll(fd, chunk);
        stall.refresh();
        options.onBytes(chunk.length);
      }
    } finally {
      closeSync(fd);
    }
  } finally {
    clearTimeout(stall);
  }
  const have = sizeOf(partial);
  if (have < size) throw new EndedEarly(have);
  return have;
}

/** A response that ended, without an error, before the blob did. */
class EndedEarly extends Error {
  override name = 'EndedEarly';
  constructor(have: number) {
    super(`the response ended at byte ${have}`);
  }
}

/**
 * Fetches `size` bytes into `blob` through its partial file, resuming what is there, retrying a dropped or stalled
 * connection from where it stopped. Throws DigestMismatch (the partial removed), TransferRefused, TransferDropped (the
 * partial kept, for a later run to resume), or a file system error (ENOSPC: the partial kept).
 */
export async function transferBlob(
  blob: string,
  size: number,
  digest: Digest,
  source: Source,
  options: TransferOptions,
): Promise<void> {
  const partial = partialPath(blob);
  let have = sizeOf(partial);
  if (have > size) {
    rmSync(partial); // longer than the blob: not a prefix of it
    have = 0;
  }
  if (size === 0) {
    mkdirSync(path.dirname(partial), { recursive: true }); // an empty file: nothing to ask the Hub for
    closeSync(openSync(partial, 'w'));
  }
  // A try that brought bytes resets the count: a connection that keeps delivering is never given up on.
  for (let failures = 0; have < size;) {
    const before = have;
    try {
      have = await appendFrom(source, partial, have, size, options);
    } catch (error) {
      if (!isNetworkError(error) && !(error instanceof EndedEarly)) throw error;
      have = sizeOf(partial);
      failures = have > before ? 1 : failures + 1;
      if (failures > options.retries) throw new TransferDropped(have, failures, error);
      options.onRetry(have, networkCause(error));
      await sleep(options.retryDelayMs * 2 ** (failures - 1));
    }
  }
  options.onVerify();
  const got = await digestOf(partial, digest, size);
  if (got !== digest.hex || have !== size) {
    rmSync(partial, { force: true });
    throw new DigestMismatch(have === size ? got : `${got} (${have} bytes, not ${size})`, digest.hex);
  }
  renameSync(partial, blob);
}
