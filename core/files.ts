// Atomic writes, the one implementation: a temp file (or folder) beside the target, filled, then renamed into place.
// A killed process leaves the old file or the new one, never a torn one; the temp file it may leave behind is
// removed by `removeAtomicLeftovers` at start.
//   file    <file>.tmp-<pid>-<random>     (writeFileAtomic, writeJsonAtomic: fsync unless asked not to, then rename)
//   folder  <dir>.partial-<pid>-<hex>     (writeFolderAtomic: the caller fills it, then one rename)
import { randomBytes, randomInt } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { processExists } from './process.ts';

/** Mode of a file that holds anything secret (an episode key's hash): owner read/write only. */
export const SECRET_FILE_MODE = 0o600;

const WRITE_CHUNK = 1 << 30; // writeSync takes at most 2 GiB − 1 at once

/** Write all of `bytes` to `fd`, at `position` (a file offset) or at the file's current position. */
export function writeAll(fd: number, bytes: Uint8Array, position?: number): void {
  let done = 0;
  while (done < bytes.length) {
    const length = Math.min(WRITE_CHUNK, bytes.length - done);
    done += writeSync(fd, bytes, done, length, position === undefined ? null : position + done);
  }
}

/**
 * `data` is the whole file, or its pieces in order (a safetensors header and each tensor's bytes, so a large file
 * is never joined in memory). `durable` (default) also fsyncs, so the file survives a machine crash; without it the
 * write still survives a killed process (the page cache outlives it), at a fraction of the cost. `mode` is the new
 * file's (before umask); the temp file is created with it, so the file is never readable by others, not even for a
 * moment.
 */
export function writeFileAtomic(
  file: string,
  data: string | Uint8Array | readonly Uint8Array[],
  durable = true,
  mode = 0o666,
): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp-${process.pid}-${randomInt(2 ** 47)}`; // random: worker threads share the pid
  const pieces = typeof data === 'string' ? [Buffer.from(data, 'utf8')] : data instanceof Uint8Array ? [data] : data;
  const fd = openSync(temp, 'w', mode);
  try {
    for (const bytes of pieces) writeAll(fd, bytes);
    if (durable) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  renameSync(temp, file);
}

/** `value` as indented JSON with a final newline (the bytes a patch id is computed over, for patch.json). */
export function writeJsonAtomic(file: string, value: unknown, durable = true, mode = 0o666): void {
  writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', durable, mode);
}

/**
 * Make the folder `dir` whole: `fill(temp)` writes everything into a fresh temp folder beside it, which then replaces
 * `dir` in one rename (an existing `dir` is removed just before; callers that must not replace one check first). If
 * `fill` throws (or its promise rejects), the temp folder is removed and `dir` is left as it was. Returns what `fill`
 * returns (a promise of it for an async `fill`).
 */
export function writeFolderAtomic<T>(dir: string, fill: (temp: string) => Promise<T>): Promise<T>;
export function writeFolderAtomic<T>(dir: string, fill: (temp: string) => T): T;
export function writeFolderAtomic<T>(dir: string, fill: (temp: string) => T | Promise<T>): T | Promise<T> {
  const target = path.resolve(dir);
  mkdirSync(path.dirname(target), { recursive: true });
  const temp = `${target}.partial-${process.pid}-${randomBytes(4).toString('hex')}`;
  mkdirSync(temp);
  const finish = (result: T): T => {
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(temp, target);
    return result;
  };
  const fail = (error: unknown): never => {
    rmSync(temp, { recursive: true, force: true });
    throw error;
  };
  try {
    const result = fill(temp);
    return result instanceof Promise ? result.then(finish).catch(fail) : finish(result);
  } catch (error) {
    return fail(error);
  }
}

/** `<file>.tmp-<pid>-<random>` (above) or `<file>.tmp-<pid>` (safetensors files of earlier versions): temp files of atomic writes. */
const LEFTOVER = /\.tmp-(\d+)(?:-\d+)?$/;

/**
 * Remove the temp files of atomic writes under `dir` whose writer is gone (this process, which writes synchronously,
 * or one that no longer runs); a live process's temp file is left alone. Returns the removed paths.
 */
export function removeAtomicLeftovers(dir: string): string[] {
  const removed: string[] = [];
  for (const relative of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const match = LEFTOVER.exec(relative);
    if (!match || isRunning(Number(match[1]))) continue;
    const file = path.join(dir, relative);
    if (!statSync(file).isFile()) continue;
    rmSync(file, { force: true });
    removed.push(file);
  }
  return removed;
}

function isRunning(pid: number): boolean {
  return pid !== process.pid && processExists(pid);
}
