// Array handles: per-episode bounds on count and bytes (least recently used evicted), and a distinct error for
// unknown, foreign, expired (with the reason) and too-large arrays.
import { describe, expect, it } from 'vitest';
import { HandleStore } from '../../../service/weights/handles.ts';
import { LIMITS } from '../../../service/api/limits.ts';
import { errorOf } from './fixtures.ts';

const array = (n: number) => new Float32Array(n).fill(1);

describe('HandleStore', () => {
  it('stores arrays per episode and hands them back', () => {
    const store = new HandleStore();
    const data = array(6);
    const info = store.create('a', data, [2, 3], 'slice x[0:2]');
    expect(info).toEqual({ id: 'h1', shape: [2, 3], bytes: 24, origin: 'slice x[0:2]' });
    expect(store.get('a', 'h1').data).toBe(data);
    expect(store.list('a')).toEqual([info]);
    expect(store.usage('a')).toEqual({ count: 1, bytes: 24 });
    expect(store.usage('b')).toEqual({ count: 0, bytes: 0 });
    expect(() => store.create('a', array(5), [2, 3], 'bad')).toThrow('shape [2,3] needs 6');
  });

  it('evicts the least recently used handle past the count bound', () => {
    const store = new HandleStore({ handleCount: 3, handleBytes: 1 << 20 });
    for (let i = 0; i < 3; i++) store.create('a', array(4), [4], `#${i}`);
    store.get('a', 'h1'); // h2 is now the least recently used
    store.create('a', array(4), [4], '#3');
    expect(store.list('a').map((h) => h.id)).toEqual(['h3', 'h1', 'h4']);
    const error = errorOf(() => store.get('a', 'h2'));
    expect(error.code).toBe('HANDLE_EXPIRED');
    expect(error.message).toContain('evicted to stay within 3 handles');
  });

  it('evicts to stay within the byte bound and refuses an array larger than the bound', () => {
    const store = new HandleStore({ handleCount: 100, handleBytes: 1000 });
    store.create('a', array(100), [100], 'a'); // 400 B
    store.create('a', array(100), [100], 'b'); // 800 B
    store.create('a', array(100), [100], 'c'); // 1200 B > 1000: h1 goes
    expect(store.list('a').map((h) => h.id)).toEqual(['h2', 'h3']);
    expect(store.usage('a').bytes).toBe(800);
    const error = errorOf(() => store.create('a', array(251), [251], 'slice big'));
    expect(error.code).toBe('HANDLE_LIMIT');
    expect(error.message).toContain('slice big');
    expect(store.usage('a')).toEqual({ count: 2, bytes: 800 }); // the refused array evicted nothing
  });

  it('keeps the bounds per episode', () => {
    const store = new HandleStore({ handleCount: 1, handleBytes: 1 << 20 });
    store.create('a', array(1), [1], 'a');
    store.create('b', array(1), [1], 'b');
    expect(store.get('a', 'h1').origin).toBe('a');
    expect(store.get('b', 'h2').origin).toBe('b');
  });

  it('tells unknown, foreign, released and ended-episode handles apart', () => {
    const store = new HandleStore();
    store.create('a', array(2), [2], 'x');
    store.create('a', array(2), [2], 'y');
    expect(errorOf(() => store.get('a', 'h99')).code).toBe('HANDLE_NOT_FOUND');
    expect(errorOf(() => store.get('a', 7)).code).toBe('HANDLE_NOT_FOUND');
    expect(errorOf(() => store.get('b', 'h1'))).toEqual({
      code: 'HANDLE_FOREIGN',
      message: 'array handle "h1" belongs to another episode',
    });
    store.release('a', 'h1');
    expect(errorOf(() => store.get('a', 'h1'))).toEqual({
      code: 'HANDLE_EXPIRED',
      message: 'array handle "h1" has expired: released',
    });
    store.dropEpisode('a');
    expect(errorOf(() => store.get('a', 'h2')).message).toContain('its episode ended');
    expect(errorOf(() => store.get('b', 'h2')).code).toBe('HANDLE_FOREIGN');
  });

  it('documents its defaults in LIMITS', () => {
    expect(LIMITS.handleCount).toBe(64);
    expect(LIMITS.handleBytes).toBe(256 * 1024 * 1024);
  });
});
