// `npx iwibench bench engine --rounds N` prints, for each figure, bound and ratio, the median over the rounds of
// what each round measured against its own references.
import { expect, it } from 'vitest';
import { medianLeaves } from '../../scripts/bench/engine.ts';

it('takes the median of every figure over the rounds, each number on its own', () => {
  const rounds = [
    { decode: { batch_1: 90, batch_8: 300 }, ratio: 1.4 },
    { decode: { batch_1: 150, batch_8: 160 }, ratio: 2.1 },
    { decode: { batch_1: 100, batch_8: 170 }, ratio: 1.2 },
  ];
  expect(medianLeaves(rounds)).toEqual({ decode: { batch_1: 100, batch_8: 170 }, ratio: 1.4 });
  expect(medianLeaves(rounds.slice(0, 2))).toEqual({ decode: { batch_1: 120, batch_8: 230 }, ratio: 1.75 });
  expect(medianLeaves(rounds.slice(0, 1))).toEqual(rounds[0]);
  expect(() => medianLeaves([])).toThrow(/no rounds/);
});
