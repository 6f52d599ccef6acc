// Public/terminal splits of parameter pools and prompt templates. The elements of a pool are ranked by a SHA-256 of
// (family version, family, pool name, element key); the first PUBLIC_SHARE of the ranking is public (practice), the
// rest terminal. Ranking instead of a per-element threshold keeps small pools (five templates) balanced; adding an
// element moves at most one other across the line. The pool name is in the hash, so pools split independently.
import { createHash } from 'node:crypto';
import { FAMILY_VERSION } from './types.ts';

export type Split = 'public' | 'terminal';

/** Share of each pool that is public. The terminal side gets the rest: it needs more items. */
export const PUBLIC_SHARE = 0.4;

const hashOf = (family: string, pool: string, key: string) =>
  createHash('sha256').update(`${FAMILY_VERSION}/${family}/${pool}/${key}`).digest('hex');

/** Public element keys per (family, pool, pool content): episodes split the same pools many times. */
const publicKeys = new Map<string, Set<string>>();

/** Both sides of a pool, each in the pool's own order. Pools of two or more elements have both sides non-empty. */
export function splitPool<T>(
  family: string,
  pool: string,
  items: readonly T[],
  keyOf: (item: T) => string,
): Record<Split, T[]> {
  const keys = items.map(keyOf);
  const memo = `${family}\u0000${pool}\u0000${keys.join('\u0000')}`;
  let chosen = publicKeys.get(memo);
  if (!chosen) {
    if (new Set(keys).size !== keys.length) throw new Error(`${family}/${pool}: duplicate keys in the pool`);
    const publicCount =
      keys.length < 2 ? 0 : Math.min(keys.length - 1, Math.max(1, Math.round(PUBLIC_SHARE * keys.length)));
    const ranked = keys
      .map((key) => ({ key, hash: hashOf(family, pool, key) }))
      .sort((a, b) => (a.hash < b.hash ? -1 : 1));
    chosen = new Set(ranked.slice(0, publicCount).map((r) => r.key));
    publicKeys.set(memo, chosen);
  }
  const isPublic = chosen;
  return {
    public: items.filter((_, i) => isPublic.has(keys[i]!)),
    terminal: items.filter((_, i) => !isPublic.has(keys[i]!)),
  };
}

/** The elements of `items` on one side of the split; `keyOf` names an element (its text, or its id). */
export function onSide<T>(
  family: string,
  pool: string,
  items: readonly T[],
  split: Split,
  keyOf: (item: T) => string,
): T[] {
  return splitPool(family, pool, items, keyOf)[split];
}
