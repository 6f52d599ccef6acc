// A Hugging Face cache laid out exactly as huggingface_hub leaves a download: every file stored once under
// blobs/<sha256>, each snapshots/<revision>/<file> a relative symlink to its blob, refs/<name> holding a revision.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Adds `sourceDir`'s files to `cacheDir` as snapshot `revision` of `modelId`; returns the snapshot folder. */
export function addSnapshot(
  cacheDir: string,
  modelId: string,
  revision: string,
  sourceDir: string,
  refs: string[] = [],
): string {
  const repo = path.join(cacheDir, `models--${modelId.replaceAll('/', '--')}`);
  const snapshot = path.join(repo, 'snapshots', revision);
  mkdirSync(path.join(repo, 'blobs'), { recursive: true });
  mkdirSync(snapshot, { recursive: true });
  for (const name of readdirSync(sourceDir)) {
    const bytes = readFileSync(path.join(sourceDir, name));
    const blob = createHash('sha256').update(bytes).digest('hex');
    if (!existsSync(path.join(repo, 'blobs', blob))) writeFileSync(path.join(repo, 'blobs', blob), bytes);
    symlinkSync(path.join('..', '..', 'blobs', blob), path.join(snapshot, name));
  }
  for (const ref of refs) {
    mkdirSync(path.join(repo, 'refs'), { recursive: true });
    writeFileSync(path.join(repo, 'refs', ref), revision); // no newline, as huggingface_hub writes it
  }
  return snapshot;
}
