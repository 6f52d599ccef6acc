// What an addon build is made from: the native sources (the .cc, .h, .gyp and .mjs files here) and the Node it is
// built for. build.mjs keeps an addon whose stamp matches; test/engine/native-build.test.ts reads the same digest.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

export const STAMP_FILE = 'build/sources.sha256';

/** The SHA-256 of the sources in `dir` (names and bytes, in name order) and of this Node's ABI, platform and arch. */
export function sourcesDigest(dir) {
  const hash = createHash('sha256').update(`${process.versions.modules} ${process.platform} ${process.arch}\n`);
  for (const name of readdirSync(dir)
    .filter((name) => /\.(cc|h|gyp|mjs)$/.test(name))
    .sort())
    hash.update(`${name}\n`).update(readFileSync(path.join(dir, name)));
  return hash.digest('hex');
}
