import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { examplesByCategory, loadDataset, readQuestionFile, type Question } from '../../mmlu-pro/data.ts';
import { LANGUAGES } from '../../mmlu-pro/languages.ts';
import { buildPrompt, formatExample, systemPromptFor } from '../../mmlu-pro/prompts.ts';
import { questions } from './fixtures.ts';
import { DATA_DIR } from './helpers.ts';

const base = { answer: 'A', answer_index: 0, category: 'math' as const, src: 'test' };
const shots: Question[] = [
  {
    ...base,
    question_id: 1,
    question: 'What is 1 + 1?',
    options: ['1', '2', '3'],
    answer: 'B',
    answer_index: 1,
    cot_content: "A: Let's think step by step. One plus one is two. The answer is (B).",
  },
  {
    ...base,
    question_id: 2,
    question: 'Which is prime?',
    options: ['4', '6', '7', '8'],
    answer: 'C',
    answer_index: 2,
    cot_content: "A: Let's think step by step. 7 is prime. The answer is (C).",
  },
];
const question: Question = {
  ...base,
  question_id: 9,
  question: 'What is 2 + 2?',
  options: ['3', '4', '5'],
  answer: 'B',
  answer_index: 1,
  cot_content: '',
};
const SYSTEM = 'SYS about math.';

const SHOT_1 = 'Question: What is 1 + 1?\nOptions: A. 1\nB. 2\nC. 3';
const SHOT_2 = 'Question: Which is prime?\nOptions: A. 4\nB. 6\nC. 7\nD. 8';
const ASKED = 'Question: What is 2 + 2?\nOptions: A. 3\nB. 4\nC. 5';
const PLAIN =
  `${SHOT_1}\nAnswer: Let's think step by step. One plus one is two. The answer is (B).\n\n` +
  `${SHOT_2}\nAnswer: Let's think step by step. 7 is prime. The answer is (C).\n\n` +
  `${ASKED}\nAnswer: Let's think step by step.`;

describe('buildPrompt', () => {
  it('multi_chat: system, a user/assistant pair per example, then the question', () => {
    expect(buildPrompt('multi_chat', SYSTEM, shots, question)).toEqual({
      kind: 'chat',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: SHOT_1 },
        { role: 'assistant', content: "Answer: Let's think step by step. One plus one is two. The answer is (B)." },
        { role: 'user', content: SHOT_2 },
        { role: 'assistant', content: "Answer: Let's think step by step. 7 is prime. The answer is (C)." },
        { role: 'user', content: ASKED },
      ],
    });
  });

  it('single_chat: system, then one user message with the examples and the question', () => {
    expect(buildPrompt('single_chat', SYSTEM, shots, question)).toEqual({
      kind: 'chat',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: PLAIN },
      ],
    });
  });

  it('no_chat: one text for /v1/completions, ending "Answer: Let\'s think step by step."', () => {
    expect(buildPrompt('no_chat', SYSTEM, shots, question)).toEqual({ kind: 'text', text: `${SYSTEM}\n\n${PLAIN}` });
  });

  it('without --cot there are no examples', () => {
    expect(buildPrompt('multi_chat', SYSTEM, [], question)).toEqual({
      kind: 'chat',
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: ASKED },
      ],
    });
    expect(buildPrompt('no_chat', SYSTEM, [], question)).toEqual({
      kind: 'text',
      text: `${SYSTEM}\n\n${ASKED}\nAnswer: Let's think step by step.`,
    });
  });
});

describe('formatExample and the system prompt', () => {
  it('strips a leading "A: " only (the Chinese file\'s "A：" stays), then strips as Python strips', () => {
    expect(formatExample('Q?', ['x'], 'A: because.').answer).toBe('because.');
    expect(formatExample('Q?', ['x'], 'A：我们一步一步来想。').answer).toBe('A：我们一步一步来想。');
    expect(formatExample('Q?', ['x'], 'A:because.').answer).toBe('A:because.');
    expect(formatExample('Q?', ['x'], '  no prefix here  ').answer).toBe('no prefix here');
    // Python's str.strip() takes \x1c-\x1f and \x85 but leaves \ufeff; JavaScript's trim() does the opposite.
    expect(formatExample('Q?', ['x'], '\x1c\x85why\ufeff').answer).toBe('why\ufeff');
    expect(formatExample('  Q?  ', ['x', 'y']).example).toBe('Question:   Q?  \nOptions: A. x\nB. y');
  });

  it('replaces every {subject} with the category name', () => {
    expect(systemPromptFor('about {subject}; again {subject}.', 'computer science')).toBe(
      'about computer science; again computer science.',
    );
    expect(systemPromptFor(LANGUAGES.en.systemPrompt, 'law')).toBe(
      'You are an expert that knows everything. You are tasked with answering a multiple-choice question. The following is a multiple choice question (with answers) about law. Give your final answer in the format of `The answer is (chosen answer)`.',
    );
  });
});

describe('5-shot prompts from the validation split (synthetic files)', () => {
  it('English: five pairs per category, "N/A" padding gone, no "A: " left', async () => {
    const data = await loadDataset(DATA_DIR, 'en', true);
    const examples = examplesByCategory(data.validation);
    const asked = data.test.find((q) => q.category === 'computer science')!;
    const prompt = buildPrompt('multi_chat', 'S', examples.get('computer science')!, asked);
    if (prompt.kind !== 'chat') throw new Error('expected chat');
    expect(prompt.messages).toHaveLength(12);
    expect(prompt.messages.map((m) => m.role)).toEqual([
      'system',
      ...Array(5).fill(['user', 'assistant']).flat(),
      'user',
    ]);
    for (const m of prompt.messages.filter((m) => m.role === 'assistant'))
      expect(m.content).toMatch(/^Answer: Let's think step by step\./);
    expect(prompt.messages.some((m) => m.content.includes('N/A'))).toBe(false);
  });

  it('Chinese: only "N/A" dropped (不适用 stays), the config\'s Chinese system prompt', async () => {
    const { questions: zh } = await readQuestionFile(path.join(DATA_DIR, 'MMLU-Pro-Validation-zh.json'), ['N/A']);
    const math = examplesByCategory(zh).get('math')!;
    expect(math).toHaveLength(5);
    expect(math.some((q) => q.options.includes('不适用'))).toBe(true);
    expect(math).toEqual(questions('validation', 'zh').filter((q) => q.category === 'math'));
    const prompt = buildPrompt('multi_chat', systemPromptFor(LANGUAGES.zh.systemPrompt, 'math'), math, question, 'zh');
    if (prompt.kind !== 'chat') throw new Error('expected chat');
    expect(prompt.messages[0]!.content).toContain('以下是一道关于math的多项选择题（附答案）');
    expect(prompt.messages[1]!.content).toMatch(
      /^问题：Synthetic validation question 0 about math \(zh\)\?\n选项: A\. /,
    );
  });
});
