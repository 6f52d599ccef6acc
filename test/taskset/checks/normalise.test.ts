import { describe, expect, it } from 'vitest';
import {
  containsTerm,
  countWords,
  normalise,
  numbersIn,
  numberWordsToDigits,
} from '../../../taskset/checks/normalise.ts';

describe('normalise', () => {
  it('folds case, NFKC and Latin accents, and turns punctuation into spaces', () => {
    expect(normalise('  PARÍS!!  ')).toBe(normalise('paris'));
    expect(normalise('ﬁne')).toBe('fine'); // NFKC ligature
    expect(normalise("don't-stop")).toBe('don t stop');
  });

  it('keeps kana and han intact (only Latin combining marks are removed)', () => {
    expect(normalise('ガイド')).toBe('ガイド');
    expect(normalise('東京')).toBe('東京');
  });

  it('turns English number words into digits and drops thousands separators', () => {
    expect(normalise('Twenty-one')).toBe('21');
    expect(normalise('one hundred and five')).toBe('105');
    expect(normalise('three thousand two hundred')).toBe('3200');
    expect(normalise('1,234,567 people')).toBe('1234567 people');
    expect(numberWordsToDigits(['nineteen', 'eighty', 'four'])).toEqual(['19', '84']); // a year read aloud stays two numbers
    expect(numberWordsToDigits(['the', 'one', 'and', 'only'])).toEqual(['the', '1', 'and', 'only']);
  });
});

describe('containsTerm', () => {
  it('matches whole words only', () => {
    expect(containsTerm(normalise('The capital is Lima.'), 'Lima')).toBe(true);
    expect(containsTerm(normalise('Limassol is in Cyprus.'), 'Lima')).toBe(false);
    expect(containsTerm(normalise('A cat sat.'), 'at')).toBe(false);
  });

  it('matches multi-word terms across punctuation and case', () => {
    expect(containsTerm(normalise('It was Mexico-City, surely.'), 'mexico city')).toBe(true);
    expect(containsTerm(normalise("I can't say."), "I can't")).toBe(true);
  });

  it('treats CJK characters as word boundaries', () => {
    expect(containsTerm(normalise('答えは6です。'), '6')).toBe(true);
    expect(containsTerm(normalise('答えは16です。'), '6')).toBe(false);
    expect(containsTerm(normalise('首都はオタワです'), 'オタワ')).toBe(true);
  });

  it('never matches an empty term', () => {
    expect(containsTerm(normalise('anything'), '!!!')).toBe(false);
  });
});

describe('countWords and numbersIn', () => {
  it('counts whitespace pieces that hold a letter or digit', () => {
    expect(countWords('One two — three, 4 !')).toBe(4);
    expect(countWords('  ')).toBe(0);
    expect(countWords('well-known fact')).toBe(2);
  });

  it('reads numbers in order, in digits or words, with signs and decimals', () => {
    expect(numbersIn('48 + 17 = 65.')).toEqual([48, 17, 65]);
    expect(numbersIn('512 - 37 = 475')).toEqual([512, 37, 475]);
    expect(numbersIn('It is sixty-five.')).toEqual([65]);
    expect(numbersIn('The result is −12, or 3.5 halves of 1,200.')).toEqual([-12, 3.5, 1200]);
  });
});
