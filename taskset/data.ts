// Reads the versioned JSON data of data/ once per process. A family data file whose version is not the family
// version is an error: pools, templates and checks change together.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAMILY_VERSION } from './types.ts';

export const DATA_DIR = fileURLToPath(new URL('../data/', import.meta.url));

const cache = new Map<string, unknown>();

/** `relative` is a path under data/, e.g. "families/world.json". */
export function readData<T>(relative: string, options: { versioned?: boolean } = {}): T {
  const cached = cache.get(relative);
  if (cached !== undefined) return cached as T;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path.join(DATA_DIR, relative), 'utf8'));
  } catch (error) {
    throw new Error(`data/${relative}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if ((options.versioned ?? true) && (parsed as { version?: unknown }).version !== FAMILY_VERSION) {
    throw new Error(
      `data/${relative}: version ${JSON.stringify((parsed as { version?: unknown }).version)}, expected "${FAMILY_VERSION}"`,
    );
  }
  cache.set(relative, parsed);
  return parsed as T;
}
