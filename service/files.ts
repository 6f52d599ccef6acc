// Atomic file writes: a temp file in the same folder, fsync, rename. A killed process leaves the old file or the
// new one, never a torn one; the temp file it may leave behind is removed by `removeAtomicLeftovers` at start.
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Mode of a file that holds anything secret (an episode key's hash): owner read/write only. */
export const SECRET_FILE_MODE = 0o600;

/**
 * `durable` (default) also fsyncs, so the file survives a machine crash; without it the write still survives a
 * killed process (the page cache outlives it), at a fraction of the cost. `mode` is the new file's (before umask);
 * the temp file is created with it, so the file is never readable by others, not even for a moment.
 */
export function writeFileAtomic(file: string, data: string | Uint8Array, durable = true, mode = 0o666): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp-${process.pid}-${Date.now()}`;
  const fd = openSync(temp, 'w', mode);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let done = 0;
    while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done);
    if (durable) fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
}

export function writeJsonAtomic(file: string, value: unknown, durable = true, mode = 0o666): void {
  writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', durable, mode);
}

/** `<file>.tmp-<pid>` (safetensors) or `<file>.tmp-<pid>-<ms>` (above): the temp files of atomic writes. */
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
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0); // signal 0: only asks whether the process exists
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, but is another user's
  }
}
