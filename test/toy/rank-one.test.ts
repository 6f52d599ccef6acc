// The arithmetic of builtin:rank-one: its MLP key is the down-projection's input as the engine computes it, and its
// ridge solve inverts C + λI.
import { describe, expect, it } from 'vitest';
import { mlpKey, ridgeSolver } from '../../taskset/harness/builtin-rank-one.ts';
import { Rng } from '../../core/random.ts';

const rng = new Rng('rank-one-test');
const vector = (n: number) => Array.from({ length: n }, () => rng.next() * 2 - 1);

describe('builtin:rank-one arithmetic', () => {
  it('mlpKey is gelu_tanh(G·x) ⊙ (U·x) of the RMS-normed residual with (1 + w)', () => {
    const h = [3, -4];
    const w = [0.5, -0.5];
    const gate = [
      [1, 0],
      [0, 1],
      [1, 1],
    ];
    const up = [
      [2, 0],
      [0, 1],
      [1, -1],
    ];
    const rms = Math.sqrt((9 + 16) / 2 + 1e-6);
    const x = [(3 / rms) * 1.5, (-4 / rms) * 0.5];
    const gelu = (z: number) => 0.5 * z * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (z + 0.044715 * z ** 3)));
    const expected = [gelu(x[0]!) * 2 * x[0]!, gelu(x[1]!) * x[1]!, gelu(x[0]! + x[1]!) * (x[0]! - x[1]!)];
    mlpKey(h, w, gate, up).forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 12));
  });

  it('ridgeSolver returns x with (C + λI)·x = b, C the mean outer product of the keys', () => {
    const n = 12;
    const keys = Array.from({ length: 30 }, () => vector(n));
    const share = 0.05;
    const solve = ridgeSolver(keys, share);
    const b = vector(n);
    const x = solve(b);
    const C = (i: number, j: number) => keys.reduce((s, k) => s + k[i]! * k[j]!, 0) / keys.length;
    const lambda = (share * Array.from({ length: n }, (_, i) => C(i, i)).reduce((a, c) => a + c, 0)) / n;
    for (let i = 0; i < n; i++) {
      let row = lambda * x[i]!;
      for (let j = 0; j < n; j++) row += C(i, j) * x[j]!;
      expect(row).toBeCloseTo(b[i]!, 9);
    }
  });
});
