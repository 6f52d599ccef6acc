import { describe, expect, it } from 'vitest';
import { extractAnswer } from '../../mmlu-pro/extract.ts';
import type { LanguageCode } from '../../mmlu-pro/languages.ts';

// [language, response, original, tiger, lenient, why]. Each expected letter was worked out from the rules (extract.ts
// header): original = run_openai.py 6c0efcf's rules per language, case-sensitive (its letters were checked once by
// running its extract_answer on these responses); tiger = TIGER-Lab's English rules; lenient = case-insensitive
// brackets, no letter glued to a word.
type Row = [LanguageCode, string, string | null, string | null, string | null, string];
const TABLE: Row[] = [
  ['en', 'Let me work it out. The answer is (B).', 'B', 'B', 'B', 'rule 1, round brackets'],
  [
    'en',
    'The answer is (b)',
    null,
    null,
    'B',
    "lower case: unparsed for the original (the original's gap), read by lenient",
  ],
  ['en', 'THE ANSWER IS (C)', 'C', 'C', 'C', 'phrase in capitals: rule 3 for the original'],
  ['en', 'so the answer is D.', 'D', 'D', 'D', 'rule 1 without brackets'],
  ['en', 'The answer is [C]', 'C', 'C', 'C', "square brackets: the fork's fix (original), rule 3 (tiger)"],
  ['en', 'The answer is [c]', null, null, 'C', 'square brackets, lower case'],
  ['en', 'The answer is (Option B), not A.', 'A', 'A', 'A', 'no bracket fix in 6c0efcf: rule 3 for the original too'],
  ['en', 'The answer is (E Paris is the capital)', 'E', 'E', 'E', 'words after the letter inside the brackets'],
  [
    'en',
    'The answer is a function of x. Checking again, the answer is (C).',
    'C',
    'C',
    'C',
    'a lower-case bare letter is no match',
  ],
  [
    'en',
    'The answer is Because of entropy. Final: the answer is (F)',
    'F',
    'B',
    'F',
    '6c0efcf\'s rule 1 wants a capital "Answer is": rule 3 (F); tiger\'s lower-case rule 1 reads the B',
  ],
  [
    'en',
    'The answer is (A). Wait, no: the answer is (B).',
    'B',
    'A',
    'A',
    '6c0efcf: no "Answer is" in capitals, so rule 3, the last standalone capital',
  ],
  [
    'en',
    'The answer is (C).\n\nWhy not the others: A is too small and B too large.',
    'B',
    'C',
    'C',
    '6c0efcf: rule 3 takes the trailing B; tiger and lenient read rule 1',
  ],
  ['en', 'Answer: D', 'D', 'D', 'D', 'rule 2'],
  ['en', 'answer: (G)', 'G', 'G', 'G', 'rule 2 with brackets (tiger: rule 3)'],
  ['en', 'Answer: [H]', 'H', 'H', 'H', "rule 2, square brackets: the fork's fix (original), rule 3 (tiger)"],
  [
    'en',
    'Answer: B or maybe Answer: C\nAnswer: D',
    'D',
    'C',
    'C',
    '6c0efcf\'s rule 2 wants "Answer is:": rule 3 (D); tiger\'s rule 2 takes the last on the first line',
  ],
  ['en', 'Answer:\n  J', 'J', 'J', 'J', 'rule 2: \\s* crosses the line break'],
  [
    'en',
    'Answer: Based on the data, I pick C',
    'C',
    'B',
    'C',
    '6c0efcf: rule 3 (C); tiger\'s "Answer: B" reads the B of Based',
  ],
  ['en', '(E) Paris', 'E', 'E', 'E', 'rule 3: Paris is not a standalone letter'],
  ['en', 'Option A looks right, but B is better', 'B', 'B', 'B', 'rule 3: the last standalone capital'],
  ['en', 'I think it is C.\nLooking again... definitely D', 'D', 'D', 'D', 'rule 3 spans lines (dot-all)'],
  ['en', 'Between A and B. CD and EF are not options', 'B', 'B', 'B', 'letters inside words do not count'],
  ['en', 'Not sure, sorry.', null, null, null, 'nothing'],
  ['en', 'I do not know.', 'I', 'I', 'I', 'the pronoun "I" is an option letter, as in the reference'],
  ['en', '', null, null, null, 'empty response'],
  ['en', 'the answer is k', null, null, null, 'K is not an option letter'],
  ['ja', '答えは (B) です', 'B', 'B', 'B', "Japanese rule 1 (the prompt's spacing); rule 3 for the others"],
  ['ja', '答えは(A)です。', 'A', 'A', 'A', 'no spaces: the bracket fix'],
  ['ja', '答えはAです', null, null, null, 'Python word boundaries: a letter between kana is inside a word'],
  [
    'ja',
    'The answer is (c). 答えは (D) です',
    'D',
    'D',
    'C',
    "the language's phrase for the original; English for lenient",
  ],
  ['id', 'Jawabannya adalah (B).', 'B', 'B', 'B', 'Indonesian rule 1'],
  ['id', 'Jawaban: C, bukan A', 'A', 'A', 'A', '6c0efcf\'s rule 2 wants "Jawaban adalah:": rule 3 for all'],
  ['id', 'Jawabannya adalah [E]', 'E', 'E', 'E', 'Indonesian, square brackets'],
  ['ko', '대답은 (C)입니다.', 'C', 'C', 'C', 'Korean rule 1'],
  ['ko', '대답: D 입니다, A 아님', 'A', 'A', 'A', '6c0efcf\'s rule 2 wants "대답은:": rule 3 for all'],
  ['zh', '答案是（B）。', 'B', 'B', 'B', 'Chinese full-width brackets: the bracket fix; rule 3 for the others'],
  ['zh', '答案: C，不是 A', 'A', 'A', 'A', '6c0efcf\'s rule 2 wants "答案是:": rule 3 for all'],
];

describe('extractAnswer, per language and profile', () => {
  it.each(TABLE)('%s %j → original %s, tiger %s, lenient %s (%s)', (language, response, original, tiger, lenient) => {
    expect(extractAnswer(response, 'original', language)).toBe(original);
    expect(extractAnswer(response, 'tiger', language)).toBe(tiger);
    expect(extractAnswer(response, 'lenient', language)).toBe(lenient);
  });

  it('the table has cases where each pair of profiles differs', () => {
    const differ = (a: number, b: number) => TABLE.some((row) => row[a] !== row[b]);
    expect([differ(2, 3), differ(2, 4), differ(3, 4)]).toEqual([true, true, true]);
  });

  it('runs in linear time on a long response with many "answer:" and no letter', () => {
    const text = `${'the answer: ? '.repeat(20_000)}\n`.repeat(3);
    for (const profile of ['original', 'tiger', 'lenient'] as const)
      expect(extractAnswer(text, profile, 'en')).toBeNull();
  });
});
