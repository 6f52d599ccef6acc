// The weights of submitted patches, for the OpenAI-compatible endpoints (`"<id>+patch:<sha256>"`): each patch's
// touched tensors replayed over the pristine weights, the last few kept. Keyed by patch id, i.e. by content: an entry
// is served only while its folder's files are the ones whose bytes were verified (same inode, size, mtime and ctime;
// any rewrite, copy over or rename changes ctime); otherwise the folder is loaded and its id checked again, so a
// swapped folder is refused, never served from the cache.
import { statSync } from 'node:fs';
import path from 'node:path';
import { overlaySource, type Checkpoint, type WeightSource } from '../../engine/index.ts';
import { PATCH_ARRAYS, PATCH_JSON, applyPatch } from './patch.ts';

/** Patched weight sets kept (each holds its touched tensors' BF16 bits only). */
const KEPT = 2;

export class PatchedSources {
  private readonly kept = new Map<string, { source: WeightSource; files: string }>();

  constructor(
    private readonly checkpoint: Checkpoint,
    private readonly pristine: WeightSource,
  ) {}

  /** The pristine weights with the patch of id `id` in `dir` applied (PATCH_ID_MISMATCH if the folder holds another). */
  source(id: string, dir: string): WeightSource {
    const files = fileStamps(dir); // taken before reading: a change while reading shows at the next request
    const cached = this.kept.get(id);
    if (cached && cached.files === files) return cached.source;
    this.kept.delete(id);
    const source = overlaySource(this.pristine, applyPatch(this.checkpoint, dir, id));
    if (this.kept.size >= KEPT) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(id, { source, files });
    return source;
  }
}

/** What identifies the files of a patch folder as they are now, without reading them. */
function fileStamps(dir: string): string {
  return [PATCH_JSON, PATCH_ARRAYS]
    .map((name) => {
      try {
        const s = statSync(path.join(dir, name), { bigint: true });
        return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
      } catch {
        return 'missing'; // loading then refuses the folder with its own message
      }
    })
    .join('|');
}
