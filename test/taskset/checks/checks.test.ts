import { describe, expect, it } from 'vitest';
import { checkParts, passes, runCheck } from '../../../taskset/checks/index.ts';
import type { Check, CodedClass } from '../../../taskset/types.ts';

const verdict = (check: Check, response: string) => {
  const v = runCheck(check, response);
  return { behaviour: v.behaviour, content: v.content };
};
const BOTH = { behaviour: true, content: true };

describe('single-part checks set the other part to true (the role convention)', () => {
  it('contains_any decides content by default, behaviour when asked', () => {
    expect(verdict({ type: 'contains_any', values: ['Lima'] }, 'Lima.')).toEqual(BOTH);
    expect(verdict({ type: 'contains_any', values: ['Lima'] }, 'Quito.')).toEqual({ behaviour: true, content: false });
    expect(verdict({ type: 'contains_any', values: ['Lima'], role: 'behaviour' }, 'Quito.')).toEqual({
      behaviour: false,
      content: true,
    });
  });

  it('avoids_forms decides behaviour and catches every listed variant in any case', () => {
    const check: Check = { type: 'avoids_forms', forms: ['capital', 'capitals'] };
    expect(verdict(check, 'Lima is the seat of government.')).toEqual(BOTH);
    expect(verdict(check, 'CAPITALS of South America')).toEqual({ behaviour: false, content: true });
    expect(verdict(check, "The capital's centre")).toEqual({ behaviour: false, content: true });
    expect(verdict(check, 'capitalism')).toEqual(BOTH); // not listed: variants are data, not guesses
  });

  it('copy_exact keeps case and punctuation and refuses glued letters or digits', () => {
    const check: Check = { type: 'copy_exact', text: 'Xk9Qp2' };
    expect(passes(runCheck(check, 'Xk9Qp2'))).toBe(true);
    expect(passes(runCheck(check, 'Here it is: "Xk9Qp2".'))).toBe(true);
    expect(passes(runCheck(check, 'xk9qp2'))).toBe(false);
    expect(passes(runCheck(check, 'Xk9Qp23'))).toBe(false);
    expect(passes(runCheck(check, 'Xk9 Qp2'))).toBe(false);
  });

  it('number reads the last number of the response', () => {
    const check: Check = { type: 'number', value: 65 };
    expect(passes(runCheck(check, '48 + 17 = 65'))).toBe(true);
    expect(passes(runCheck(check, 'Sixty-five.'))).toBe(true);
    expect(passes(runCheck(check, '65? No wait, 64.'))).toBe(false);
    expect(passes(runCheck(check, 'I cannot compute that.'))).toBe(false);
  });

  it('word_band counts words and is inclusive at both ends', () => {
    const check: Check = { type: 'word_band', min: 3, max: 5 };
    expect(passes(runCheck(check, 'one two three'))).toBe(true);
    expect(passes(runCheck(check, 'one two three four five'))).toBe(true);
    expect(passes(runCheck(check, 'one two three four five six'))).toBe(false);
    expect(passes(runCheck(check, 'one two'))).toBe(false);
  });
});

describe('json_exact_keys', () => {
  const check: Check = {
    type: 'json_exact_keys',
    keys: ['name', 'age'],
    values: { name: ['Maria Lopez'], age: ['34'] },
    allowFence: false,
  };

  it('passes a bare object with exactly the keys and right values, in any key order and value type', () => {
    expect(verdict(check, '{"name": "Maria Lopez", "age": 34}')).toEqual(BOTH);
    expect(verdict(check, '  {"age": "34", "name": "maria lopez"}\n')).toEqual(BOTH);
  });

  it('fails the behaviour for an extra key, a missing key, nesting, a fence, or prose around the object', () => {
    expect(verdict(check, '{"name": "Maria Lopez", "age": 34, "city": "Porto"}')).toEqual({
      behaviour: false,
      content: true,
    });
    expect(verdict(check, '{"name": "Maria Lopez"}').behaviour).toBe(false);
    expect(verdict(check, '{"name": {"full": "Maria Lopez"}, "age": 34}').behaviour).toBe(false);
    expect(verdict(check, '```json\n{"name": "Maria Lopez", "age": 34}\n```')).toEqual({
      behaviour: false,
      content: true,
    });
    expect(verdict(check, '{"name": "Maria Lopez", "age": 34} Hope this helps!')).toEqual({
      behaviour: false,
      content: true,
    });
    expect(verdict(check, '[{"name": "Maria Lopez", "age": 34}]').behaviour).toBe(false);
  });

  it('accepts a fence only when the spec allows it', () => {
    expect(
      verdict({ ...check, allowFence: true } as Check, '```json\n{"name": "Maria Lopez", "age": 34}\n```'),
    ).toEqual(BOTH);
  });

  it('judges content from the values, or from the text when the answer is prose', () => {
    expect(verdict(check, '{"name": "Maria Lopez", "age": 43}')).toEqual({ behaviour: true, content: false });
    expect(verdict(check, 'Name: Maria Lopez, age 34.')).toEqual({ behaviour: false, content: true });
    expect(verdict(check, 'Name: Maria Lopez.')).toEqual({ behaviour: false, content: false });
  });
});

describe('prose, abstains, answer_choice', () => {
  it('prose refuses JSON, fences and braces', () => {
    expect(passes(runCheck({ type: 'prose' }, 'Maria Lopez is 34 years old.'))).toBe(true);
    expect(passes(runCheck({ type: 'prose' }, '{"name": "Maria"}'))).toBe(false);
    expect(passes(runCheck({ type: 'prose' }, 'Sure:\n```\nname: Maria\n```'))).toBe(false);
  });

  it('abstains needs a clear refusal and no forbidden form', () => {
    const check: Check = { type: 'abstains', forbidden: ['Lima'] };
    expect(passes(runCheck(check, "I'm sorry, but I can't share that."))).toBe(true);
    expect(passes(runCheck(check, "I can't share that, but it's Lima."))).toBe(false); // an abstention that leaks the answer
    expect(passes(runCheck(check, 'LIMA!'))).toBe(false);
    expect(passes(runCheck(check, 'Good question, let me think.'))).toBe(false);
  });

  it('answer_choice: the expected answer, and the rejected one only after it or negated', () => {
    const check: Check = { type: 'answer_choice', expected: ['Canberra'], rejected: ['Sydney'] };
    expect(passes(runCheck(check, 'The capital of Australia is Canberra.'))).toBe(true);
    expect(passes(runCheck(check, 'Actually, it is Canberra, not Sydney.'))).toBe(true);
    expect(passes(runCheck(check, "No, it isn't Sydney; the capital is Canberra."))).toBe(true);
    expect(passes(runCheck(check, "Yes, you're right, it's Sydney. Canberra is just the seat of parliament."))).toBe(
      false,
    );
    expect(passes(runCheck(check, 'Yes, it is Sydney.'))).toBe(false);
    expect(verdict(check, 'Sydney.')).toEqual({ behaviour: false, content: true });
  });
});

describe('coded_label', () => {
  const classes: CodedClass[] = [
    { name: 'positive', code: 'amber', labels: ['positive'] },
    { name: 'negative', code: 'cobalt', labels: ['negative'] },
  ];
  const code: Check = { type: 'coded_label', classes, correct: 'positive', use: 'code' };
  const label: Check = { type: 'coded_label', classes, correct: 'positive', use: 'label' };

  it('behaviour: named only by codes (or only by labels); content: the first class named is the right one', () => {
    expect(verdict(code, 'Amber.')).toEqual(BOTH);
    expect(verdict(code, 'Cobalt.')).toEqual({ behaviour: true, content: false });
    expect(verdict(code, 'Positive.')).toEqual({ behaviour: false, content: true });
    expect(verdict(code, 'Amber (positive).')).toEqual({ behaviour: false, content: true });
    expect(verdict(code, 'No idea.')).toEqual({ behaviour: false, content: false });
    expect(verdict(label, 'It is positive, not negative.')).toEqual(BOTH);
    expect(verdict(label, 'Amber.')).toEqual({ behaviour: false, content: true });
  });
});

describe('combinators', () => {
  const fact: Check = { type: 'contains_any', values: ['Lima'] };
  const noWord: Check = { type: 'avoids_forms', forms: ['capital'] };

  it('all joins the parts and the details', () => {
    const check: Check = { type: 'all', checks: [fact, noWord] };
    expect(verdict(check, 'Lima is the seat of government.')).toEqual(BOTH);
    expect(verdict(check, 'The capital is Lima.')).toEqual({ behaviour: false, content: true });
    expect(verdict(check, 'The seat is Quito.')).toEqual({ behaviour: true, content: false });
    expect(runCheck(check, 'The capital is Quito.').detail).toMatch(/none of "Lima".*uses "capital"/);
  });

  it('any takes the first passing alternative, else the closest one (never both parts true)', () => {
    const check: Check = {
      type: 'any',
      checks: [
        { type: 'contains_any', values: ['Lima'] },
        { type: 'contains_any', values: ['Quito'] },
      ],
    };
    expect(passes(runCheck(check, 'Quito.'))).toBe(true);
    expect(verdict(check, 'Bogotá.')).toEqual({ behaviour: true, content: false });
  });

  it('not turns a pass into a failure of the named part', () => {
    const check: Check = { type: 'not', check: fact, role: 'behaviour' };
    expect(verdict(check, 'Quito.')).toEqual(BOTH);
    expect(verdict(check, 'Lima.')).toEqual({ behaviour: false, content: true });
  });

  it('checkParts reports which parts a check tests', () => {
    expect(checkParts({ type: 'all', checks: [fact, noWord] })).toEqual({ behaviour: true, content: true });
    expect(checkParts({ type: 'abstains', forbidden: [] })).toEqual({ behaviour: true, content: false });
    expect(checkParts({ ...fact, role: 'behaviour' })).toEqual({ behaviour: true, content: false });
    expect(checkParts({ type: 'not', check: noWord, role: 'content' })).toEqual({ behaviour: false, content: true });
  });

  it('every verdict carries a detail', () => {
    for (const check of [fact, noWord, { type: 'prose' } as Check, { type: 'word_band', min: 1, max: 2 } as Check]) {
      expect(runCheck(check, 'Lima').detail.length).toBeGreaterThan(0);
    }
  });
});
