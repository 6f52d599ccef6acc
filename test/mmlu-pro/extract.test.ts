import { describe, expect, it } from 'vitest';
import { extractAnswer } from '../../mmlu-pro/extract.ts';

// [response, expected letter or null, which rule decides]
const TABLE: [string, string | null, string][] = [
  ['Let me work it out. The answer is (B).', 'B', 'rule 1, round brackets'],
  ['The answer is (b)', 'B', 'rule 1 is case-insensitive (the known fork bug)'],
  ['THE ANSWER IS (C)', 'C', 'rule 1 phrase in capitals'],
  ['so the answer is D.', 'D', 'rule 1 without brackets'],
  ['The answer is [C]', 'C', 'rule 1, square brackets'],
  ['The answer is [c]', 'C', 'rule 1, square brackets, lower case'],
  ['The answer is (E) Paris', 'E', 'rule 1, words after the bracket'],
  ['The answer is [E. Paris]', 'E', 'rule 1, words inside the brackets after the letter'],
  ['The answer is (E Paris is the capital)', 'E', 'rule 1, words inside round brackets'],
  ['The answer is a function of x. Checking again, the answer is (C).', 'C', 'bare lower-case letter is not an answer'],
  ['The answer is Because of entropy. Final: the answer is (F)', 'F', 'letter glued to a word is not an answer'],
  ['The answer is (A). Wait, no: the answer is (B).', 'A', 'rule 1 takes the first match, as re.search'],
  ['The answer is (C).\n\nWhy not the others: A is too small and B too large.', 'C', 'rule 1 wins over trailing letters'],
  ['Answer: D', 'D', 'rule 2'],
  ['answer: (G)', 'G', 'rule 2, lower-case "answer" and brackets'],
  ['Answer: [H]', 'H', 'rule 2, square brackets'],
  ['Answer: B or maybe Answer: C\nAnswer: D', 'C', 'rule 2: last match on the first line with one (greedy .*)'],
  ['Answer:\n  J', 'J', 'rule 2: \\s* crosses the line break'],
  ['Answer: Based on the data, I pick C', 'C', 'rule 2 skips "Based"; rule 3 finds the last standalone capital'],
  ['[C]', 'C', 'a bare bracketed letter: rule 3'],
  ['(E) Paris', 'E', 'rule 3: Paris is not a standalone letter'],
  ['Option A looks right, but B is better', 'B', 'rule 3: the last standalone capital'],
  ['I think it is C.\nLooking again... definitely D', 'D', 'rule 3 spans lines (dot-all)'],
  ['It must be A, trailing letters: KLM XYZ', 'A', 'trailing capitals outside A-J are ignored'],
  ['Between A and B. CD and EF are not options', 'B', 'letters inside words (CD, EF) do not count'],
  ['答えは(A)です。', 'A', 'rule 3 in Japanese, brackets make the boundary'],
  ['答えはAです', null, 'Python word boundaries: a letter between kana is inside a word'],
  ['Not sure, sorry.', null, 'none'],
  ['I do not know.', 'I', 'the pronoun "I" is a standalone option letter, as in the reference'],
  ['', null, 'empty response'],
  ['the answer is k', null, 'K is not an option letter'],
];

describe('extractAnswer', () => {
  it.each(TABLE)('%j → %s (%s)', (response, expected) => {
    expect(extractAnswer(response)).toBe(expected);
  });

  it('runs in linear time on a long response with many "answer:" and no letter', () => {
    const text = `${'the answer: ? '.repeat(20_000)}\n`.repeat(3);
    const start = performance.now();
    expect(extractAnswer(text)).toBeNull();
    expect(performance.now() - start).toBeLessThan(500);
  });
});
