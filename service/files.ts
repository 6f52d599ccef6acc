// Atomic file writes: a temp file in the same folder, fsync, rename. A killed process leaves the old file or the
// new one, never a torn one.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';

/**
 * `durable` (default) also fsyncs, so the file survives a machine crash; without it the write still survives a
 * killed process (the page cache outlives it), at a fraction of the cost.
 */
export function writeFileAtomic(file: string, data: string | Uint8Array, durable = true): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp-${process.pid}-${Date.now()}`;
  const fd = openSync(temp, 'w');
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

export function writeJsonAtomic(file: string, value: unknown, durable = true): void {
  writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', durable);
}
