import { describe, expect, it } from 'vitest';
import { PUBLIC_SHARE, onSide, splitPool } from '../../taskset/split.ts';

const items = Array.from({ length: 40 }, (_, i) => `item ${i}`);
const id = (s: string) => s;

describe('splitPool', () => {
  it('is stable and covers the pool exactly once', () => {
    const a = splitPool('fam', 'pool', items, id);
    expect(splitPool('fam', 'pool', items, id)).toEqual(a);
    expect([...a.public, ...a.terminal].sort()).toEqual([...items].sort());
    expect(a.public.filter((x) => a.terminal.includes(x))).toEqual([]);
    expect(a.public.length).toBe(Math.round(PUBLIC_SHARE * items.length));
  });

  it('does not depend on the order of the pool', () => {
    const a = splitPool('fam', 'pool', items, id);
    const b = splitPool('fam', 'pool', [...items].reverse(), id);
    expect([...b.public].sort()).toEqual([...a.public].sort());
  });

  it('splits pools independently: the pool name and the family are in the hash', () => {
    const a = splitPool('fam', 'templates', items, id).public;
    expect(splitPool('fam', 'subjects', items, id).public).not.toEqual(a);
    expect(splitPool('other', 'templates', items, id).public).not.toEqual(a);
  });

  it('moves at most one old element across the line when an element is added', () => {
    const before = splitPool('fam', 'pool', items, id);
    const after = splitPool('fam', 'pool', [...items, 'a new one'], id);
    const moved = items.filter((x) => before.public.includes(x) !== after.public.includes(x));
    expect(moved.length).toBeLessThanOrEqual(1);
  });

  it('keeps both sides non-empty from two elements on, and refuses duplicate keys', () => {
    for (let n = 2; n <= 6; n++) {
      const s = splitPool('fam', `small${n}`, items.slice(0, n), id);
      expect(s.public.length).toBeGreaterThan(0);
      expect(s.terminal.length).toBeGreaterThan(s.public.length - 1);
    }
    expect(() => splitPool('fam', 'dup', ['a', 'a'], id)).toThrow(/duplicate/);
    expect(onSide('fam', 'pool', items, 'terminal', id)).toEqual(splitPool('fam', 'pool', items, id).terminal);
  });
});
