// run_openai.py at OAI-API-MMLU-Pro 6c0efcf, checked against strings copied from its code (not from ours): the
// messages it builds per language, the request parameters, its extraction rules and their fall-through, and the
// report lines of it and of run_no_random.py. Questions and replies are our own; requests go through the real
// `openai` client to the fake server.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readConfigFile, resolveConfig } from '../../mmlu-pro/config.ts';
import { extractAnswer } from '../../mmlu-pro/extract.ts';
import { startFakeServer } from '../../mmlu-pro/fake-server.ts';
import type { LanguageCode } from '../../mmlu-pro/languages.ts';
import { reportText, categoryScore } from '../../mmlu-pro/report.ts';
import { runMmluPro } from '../../mmlu-pro/runner.ts';
import { tally } from '../../mmlu-pro/score.ts';
import { REPO_ROOT, scratchDir, testConfig } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

// format_example's labels and CoT line, and config.toml's system prompts, as 6c0efcf writes them (\u escapes of its
// bytes: the Korean labels are jamo).
const ORIGINAL: Record<LanguageCode, { q: string; o: string; cot: string; system: string }> = {
  en: {
    q: 'Question: ',
    o: 'Options: ',
    cot: "Let's think step by step.",
    system:
      'You are an expert that knows everything. You are tasked with answering a multiple-choice question. The following is a multiple choice question (with answers) about math. Give your final answer in the format of `The answer is (chosen answer)`.',
  },
  id: {
    q: 'Pertanyaan: ',
    o: 'Pilihan: ',
    cot: 'Mari berpikir selangkah demi selangkah.',
    system:
      "Anda adalah seseorang yang pintar dan mengetahui segalanya. Anda diberi perintah untuk menjawab pertanyaan pilihan ganda. Berikut adalah pertanyaan pilihan ganda tentang math. Jawab dengan format: 'Jawabannya adalah (pilihan jawaban)'.",
  },
  ja: {
    q: '\u8cea\u554f: ',
    o: '\u9078\u629e\u80a2: ',
    cot: '\u6bb5\u968e\u7684\u306b\u8003\u3048\u3066\u307f\u307e\u3057\u3087\u3046\u3002',
    system:
      '\u3042\u306a\u305f\u306f\u3059\u3079\u3066\u3092\u77e5\u3063\u3066\u3044\u308b\u5c02\u9580\u5bb6\u3067\u3059\u3002\u591a\u80a2\u9078\u629e\u5f0f\u306e\u8cea\u554f\u306b\u56de\u7b54\u3059\u308b\u3053\u3068\u304c\u6c42\u3081\u3089\u308c\u307e\u3059\u3002\u6b21\u306f\u3001math \u306b\u95a2\u3059\u308b\u591a\u80a2\u9078\u629e\u5f0f\u306e\u8cea\u554f\u3067\u3059\u3002\u6700\u7d42\u7684\u306a\u56de\u7b54\u3092\u300c\u7b54\u3048\u306f (\u9078\u629e\u3057\u305f\u56de\u7b54) \u3067\u3059\u300d\u3068\u3044\u3046\u5f62\u5f0f\u3067\u5165\u529b\u3057\u3066\u304f\u3060\u3055\u3044\u3002',
  },
  ko: {
    q: '\u110c\u1175\u11af\u1106\u116e\u11ab: ',
    o: '\u1109\u1165\u11ab\u1110\u1162\u11a8\u110c\u1175: ',
    cot: '\ub2e8\uacc4\ubcc4\ub85c \uc0dd\uac01\ud574 \ubd05\uc2dc\ub2e4.',
    system:
      "\ub2f9\uc2e0\uc740 \ubaa8\ub4e0 \uac83\uc744 \uc544\ub294 \uc804\ubb38\uac00\uc785\ub2c8\ub2e4. \ub2f9\uc2e0\uc740 \uac1d\uad00\uc2dd \uc9c8\ubb38\uc5d0 \ub2f5\ud558\ub294 \uc784\ubb34\ub97c \ub9e1\uace0 \uc788\uc2b5\ub2c8\ub2e4. \ub2e4\uc74c\uc740 math\uc5d0 \uad00\ud55c \uac1d\uad00\uc2dd \uc9c8\ubb38(\ub2f5\ubcc0 \ud3ec\ud568)\uc785\ub2c8\ub2e4. \ucd5c\uc885 \ub2f5\ubcc0\uc740 '\ub300\ub2f5\uc740 (\uc120\ud0dd\ub41c \ub2f5\ubcc0)' \ud615\uc2dd\uc73c\ub85c \uc791\uc131\ud574 \uc8fc\uc138\uc694.",
  },
  zh: {
    q: '\u95ee\u9898\uff1a',
    o: '\u9009\u9879: ',
    cot: '\u8ba9\u6211\u4eec\u4e00\u6b65\u4e00\u6b65\u601d\u8003\u3002',
    system:
      '\u4f60\u662f\u4e00\u4f4d\u65e0\u6240\u4e0d\u77e5\u7684\u4e13\u5bb6\u3002\u4f60\u7684\u4efb\u52a1\u662f\u56de\u7b54\u4e00\u9053\u591a\u9879\u9009\u62e9\u9898\u3002\u4ee5\u4e0b\u662f\u4e00\u9053\u5173\u4e8emath\u7684\u591a\u9879\u9009\u62e9\u9898\uff08\u9644\u7b54\u6848\uff09\u3002\u8bf7\u4ee5\u201c\u7b54\u6848\u662f\uff08\u9009\u5b9a\u7b54\u6848\uff09\u201d\u7684\u683c\u5f0f\u7ed9\u51fa\u4f60\u7684\u6700\u7ec8\u7b54\u6848\u3002',
  },
};

const row = (id: number, question: string, options: string[], cot: string) => ({
  question_id: id,
  question,
  options,
  answer: 'B',
  answer_index: 1,
  cot_content: cot,
  category: 'math',
  src: 'ours',
});

/** A folder with the fork's two files for `language`, named as the original opens them. */
function dataFor(language: LanguageCode): string {
  const dir = path.join(scratch.dir, `data-${language}`);
  mkdirSync(dir, { recursive: true });
  const lines = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  writeFileSync(
    path.join(dir, `MMLU-Pro-Validation-${language}.json`),
    lines([
      row(1, 'Two plus two?', ['3', '4', 'N/A', 'not applicable'], 'A: Count. The answer is (B).'),
      row(2, 'Three plus one?', ['1', '4'], 'A\uff1aCount again.'),
    ]),
  );
  writeFileSync(path.join(dir, `MMLU-Pro-Test-${language}.json`), lines([row(9, ' Five minus one? ', ['2', '4'], '')]));
  return dir;
}

describe('the messages and parameters of 6c0efcf, per language', () => {
  it.each(['en', 'id', 'ja', 'ko', 'zh'] as const)('%s: multi_chat and no_chat, 2-shot', async (language) => {
    const server = await startFakeServer(() => ({ content: 'Answer is (B)' }));
    try {
      const { q, o, cot, system } = ORIGINAL[language];
      const shot1 = `${q}Two plus two?\n${o}A. 3\nB. 4\nC. not applicable`; // only "N/A" dropped
      const shot2 = `${q}Three plus one?\n${o}A. 1\nB. 4`;
      const asked = `${q} Five minus one? \n${o}A. 2\nB. 4`; // the question is not stripped, the whole is
      const flags = { language, cot: true, category: 'math', data_dir: dataFor(language) };
      await runMmluPro(testConfig(server.url, path.join(scratch.dir, `multi-${language}`), flags));
      await runMmluPro(
        testConfig(server.url, path.join(scratch.dir, `text-${language}`), { ...flags, style: 'no_chat' }),
      );
      const [chat, text] = server.requests;
      expect(chat!.body.messages).toEqual([
        { role: 'system', content: system },
        { role: 'user', content: shot1 },
        { role: 'assistant', content: 'Answer: Count. The answer is (B).' },
        { role: 'user', content: shot2 },
        { role: 'assistant', content: 'Answer: A\uff1aCount again.' }, // only "A: " is stripped
        { role: 'user', content: asked },
      ]);
      expect(text!.body.prompt).toBe(
        `${system}\n\n${shot1}\nAnswer: Count. The answer is (B).\n\n${shot2}\nAnswer: A\uff1aCount again.\n\n` +
          `${asked}\nAnswer: ${cot}`,
      );
    } finally {
      await server.close();
    }
  });

  it("sends the example config's parameters and nothing else: stop as the string it is", async () => {
    const server = await startFakeServer(() => ({ content: 'Answer is (B)' }));
    try {
      const file = readConfigFile(path.join(REPO_ROOT, 'mmlu-pro/config.toml'));
      const out = path.join(scratch.dir, 'example');
      const flags = { url: server.url, category: 'math', data_dir: dataFor('en'), output_dir: out };
      await runMmluPro(resolveConfig(file, flags));
      await runMmluPro(resolveConfig(file, { ...flags, output_dir: `${out}-q`, stop_at_question: true }));
      const [plain, withQuestion] = server.requests;
      const { messages: _messages, ...parameters } = plain!.body;
      expect(parameters).toEqual({
        model: 'llama3',
        temperature: 0,
        top_p: 1,
        max_tokens: 1024,
        stop: '<|eot_id|>',
        frequency_penalty: 0,
        presence_penalty: 0,
      });
      expect(withQuestion!.body.stop).toEqual(['Question:', '<|eot_id|>']);
      // The result file in json.dumps(indent="\t") bytes: ASCII only, no trailing newline.
      const result = readFileSync(path.join(out, 'math_result.json'), 'utf8');
      expect(result.startsWith('[\n\t{\n\t\t"question_id": 9,\n\t\t"question": " Five minus one? ",')).toBe(true);
      expect(result.endsWith('\t\t"response": "Answer is (B)",\n\t\t"pred": "B"\n\t}\n]')).toBe(true);
      expect(readFileSync(path.join(out, 'math_summary.json'), 'utf8')).toBe(
        '{\n\t"math": {\n\t\t"corr": 1.0,\n\t\t"wrong": 0.0,\n\t\t"acc": 1.0\n\t},\n\t"random": {\n\t\t"corr": 0.0,\n' +
          '\t\t"wrong": 0.0\n\t},\n\t"total": {\n\t\t"corr": 1.0,\n\t\t"wrong": 0.0,\n\t\t"acc": 1.0\n\t}\n}',
      );
    } finally {
      await server.close();
    }
  });
});

describe("6c0efcf's extraction, rule by rule", () => {
  // [language, reply, letter]: rule 1 "<phrase> \(?X\)?", rule 2 ".*<phrase>:\s*\(?X", rule 3 the last standalone capital.
  const CASES: [LanguageCode, string, string | null][] = [
    ['en', 'The answer is (B). I think so.', 'I'], // lower-case "answer is": rule 3, and "I" is in A-J
    ['en', 'Answer is (C) and not D', 'C'], // rule 1
    ['en', 'answer is (C) and not D', 'D'], // lower case: rule 3
    ['en', 'Answer is: C', 'C'], // rule 2 (rule 1 wants a space, not a colon)
    ['en', 'Answer is: A. Answer is: B\nAnswer is: C', 'B'], // rule 2: last on the first line with one
    ['en', 'Answer is: Answer is: E', 'E'], // rule 2: the overlapping later match, as greedy .*
    ['en', 'Answer is:\n(F)', 'F'], // rule 2: \s spans the line break
    ['en', 'Answer: C because option D is weak', 'D'], // no rule 1 or 2: rule 3
    ['en', 'the answer is [C], not D.', 'D'],
    ['en', 'Xylophone', null],
    ['id', 'Jawaban adalah (E)', 'E'],
    ['id', 'Jawabannya adalah (E), bukan A', 'A'], // the config's phrase is not the code's
    ['ja', '\u7b54\u3048\u306f (B) \u3067\u3059', 'B'],
    ['ja', '\u7b54\u3048\u306f (B)\u3002C', 'C'], // no " です": rule 3
    ['ko', '\ub300\ub2f5\uc740 (D)\uc785\ub2c8\ub2e4', 'D'],
    ['ko', '\ub300\ub2f5\uc740: G', 'G'],
    ['ko', '\uc815\ub2f5B \uc785\ub2c8\ub2e4', null], // a letter glued to Hangul is no word of its own in Python
    ['zh', '\u7b54\u6848\u662f (H)', 'H'],
    ['zh', '\u7b54\u6848\u662f\uff08H\uff09', 'H'], // full-width brackets: not rule 1, but rule 3 (（ is no word)
  ];
  it.each(CASES)('%s %j → %s', (language, reply, letter) => {
    expect(extractAnswer(reply, 'original', language)).toBe(letter);
    expect(extractAnswer(reply, 'no_random', language)).toBe(letter);
  });
});

describe('report.txt lines, as run_openai.py and run_no_random.py log them', () => {
  const records = [
    { question_id: 1, options: ['a', 'b', 'c'], answer: 'A', answer_index: 0, pred: 'A' },
    { question_id: 2, options: ['a', 'b', 'c'], answer: 'B', answer_index: 1, pred: 'C' },
    // seed(12345); randint(0, 2) is 1 (python3): a right guess here, a wrong one below.
    { question_id: 3, options: ['a', 'b', 'c'], answer: 'B', answer_index: 1, pred: null },
    { question_id: 4, options: ['a', 'b', 'c'], answer: 'A', answer_index: 0, pred: null },
  ];
  const seconds = { categories: [3723.4, 0], total: 90061 };
  it('original: random-guess lines per category, and overall only when both counts are non-zero', () => {
    const categories = [categoryScore('math', tally(records, 'original')), categoryScore('law', tally([], 'original'))];
    expect(reportText({ categories, profile: 'original', seconds, tokens: null })).toBe(
      [
        'Finished testing math in 1 hours, 2 minutes, 3 seconds.',
        'Total, 2/4, 50.00%',
        'Random Guess Attempts, 2/4, 50.00%',
        'Correct Random Guesses, 1/2, 50.00%',
        'Adjusted Score Without Random Guesses, 1/2, 50.00%',
        'Finished testing law in 0 hours, 0 minutes, 0 seconds.',
        'Total, 0/0, 0.00%',
        'Finished the benchmark in 1 hours, 1 minutes, 1 seconds.', // timedelta.seconds drops the day
        'Total, 2/4, 50.00%',
        'Random Guess Attempts, 2/4, 50.00%',
        'Correct Random Guesses, 1/2, 50.00%',
        'Adjusted Score Without Random Guesses, 1/2, 50.00%',
        'Markdown Table:',
        '| overall | math | law |',
        '| ------- | ---- | --- |',
        '| 50.00 | 50.00 | n/a |', // the original divides by zero for law
        '',
      ].join('\n'),
    );
  });
  it('no_random: Total and No Answer, no guess', () => {
    const categories = [categoryScore('math', tally(records, 'no_random'))];
    expect(reportText({ categories, profile: 'no_random', seconds: { categories: [5], total: 5 }, tokens: null })).toBe(
      [
        'Finished testing math in 0 hours, 0 minutes, 5 seconds.',
        'Total, 1/4, 25.00%',
        'No Answer, 2/4, 50.00%',
        'Finished the benchmark in 0 hours, 0 minutes, 5 seconds.',
        'Total, 1/4, 25.00%',
        'No Answer, 2/4, 50.00%',
        'Markdown Table:',
        '| overall | math |',
        '| ------- | ---- |',
        '| 25.00 | 25.00 |',
        '',
      ].join('\n'),
    );
  });
});
