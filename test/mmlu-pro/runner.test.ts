// Runs against a fake OpenAI-compatible server (real HTTP on 127.0.0.1, the real `openai` client) whose answers are
// scripted per question, so every reported count is known in advance, under each scoring profile.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FatalServerError } from '../../mmlu-pro/client.ts';
import { loadDataset, selectQuestions, type Category, type Question } from '../../mmlu-pro/data.ts';
import { countWords, startFakeServer, type FakeReply, type FakeRequest } from '../../mmlu-pro/fake-server.ts';
import { runMmluPro } from '../../mmlu-pro/runner.ts';
import { mulberry32, type ScoringProfile } from '../../mmlu-pro/score.ts';
import { DATA_DIR, scratchDir, testConfig } from './helpers.ts';

const CATEGORIES: Category[] = ['math', 'law', 'history'];
const SUBSET = 6;
const LETTERS = 'ABCDEFGHIJ';
// python3 -c "import random; print([(random.seed(12345), random.randint(0, n - 1))[1] for n in range(1, 11)])"
const PYTHON_GUESSES = [0, 1, 1, 3, 3, 3, 3, 6, 6, 6];

let selected: Question[] = [];
const scratch = scratchDir();
afterAll(scratch.remove);

beforeAll(async () => {
  const { test } = await loadDataset(DATA_DIR, 'en', false);
  selected = [...selectQuestions(test, CATEGORIES, SUBSET).values()].flat();
});

/** Per position in its category: right, right in lower case, wrong, a letter glued to a word, no letter, right. */
type Kind = 'right' | 'right-lower' | 'wrong' | 'glued' | 'unparsable';
function kindOf(q: Question): Kind {
  const position = selected.filter((s) => s.category === q.category).indexOf(q);
  return (['right', 'right-lower', 'wrong', 'glued', 'unparsable'] as const)[position] ?? 'right';
}

const wrongLetter = (q: Question) => LETTERS[(q.answer_index + 1) % q.options.length]!;

function scriptedReply(q: Question): string {
  switch (kindOf(q)) {
    case 'right':
      return `Let's think step by step. It follows that the answer is (${q.answer}).`;
    case 'right-lower':
      return `The answer is (${q.answer.toLowerCase()})`;
    case 'wrong':
      return `The answer is (${wrongLetter(q)}).`;
    case 'glued':
      return `The answer is Because of the data. So the answer is (${q.answer}).`;
    case 'unparsable':
      return 'No idea, sorry.';
  }
}

/** The letter each profile must read from the scripted reply, by the rules, not by calling the extractor. */
function expectedPred(q: Question, profile: ScoringProfile): string | null {
  switch (kindOf(q)) {
    case 'right':
      return q.answer;
    case 'right-lower':
      return profile === 'lenient' ? q.answer : null; // the original and TIGER read capitals only
    case 'wrong':
      return wrongLetter(q);
    case 'glued':
      // TIGER's rule 1 reads "answer is B(ecause)"; 6c0efcf's wants "Answer is", so its rule 3 takes the last capital.
      return profile === 'tiger' ? 'B' : q.answer;
    case 'unparsable':
      return null;
  }
}

/** The guess: CPython's randint after seed(12345) by option count (python3), or mulberry32 per question (lenient). */
function expectedGuess(q: Question, profile: ScoringProfile): number {
  return profile === 'lenient'
    ? Math.floor(mulberry32(12345 + q.question_id) * q.options.length)
    : PYTHON_GUESSES[q.options.length - 1]!;
}

/** What the report must say, worked out from the script alone. */
function expectedCounts(questions: Question[], profile: ScoringProfile = 'original') {
  let [correct, randomGuesses, randomCorrect, noAnswer] = [0, 0, 0, 0];
  const guesses = profile !== 'no_random'; // run_no_random.py: no letter is wrong
  for (const q of questions) {
    const pred = expectedPred(q, profile);
    if (pred === null) noAnswer += 1;
    if (pred === null && guesses) {
      randomGuesses += 1;
      if (expectedGuess(q, profile) === q.answer_index) randomCorrect += 1;
    }
    if (pred === null ? guesses && expectedGuess(q, profile) === q.answer_index : pred === q.answer) correct += 1;
  }
  return {
    total: questions.length,
    correct,
    random_guesses: randomGuesses,
    random_correct: randomCorrect,
    no_answer: noAnswer,
  };
}

function questionFor(request: FakeRequest): Question {
  const q = selected.find((s) => s.question === request.question);
  if (!q) throw new Error(`fake server: unexpected question ${request.question?.slice(0, 60)}`);
  return q;
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

const pct = (part: number, whole: number) => (part > 0 ? ((part / whole) * 100).toFixed(2) : '0.00');

describe('a run against a fake OpenAI-compatible server', () => {
  it('the scripted counts differ between the profiles (else the next test would prove little)', () => {
    const [original, noRandom, tiger, lenient] = (['original', 'no_random', 'tiger', 'lenient'] as const).map((p) =>
      expectedCounts(selected, p),
    );
    expect(original.correct).not.toBe(tiger.correct);
    expect(original.random_guesses).toBeGreaterThan(lenient.random_guesses);
    expect(original.correct).not.toBe(lenient.correct);
    expect(noRandom.correct).toBe(original.correct - original.random_correct);
    expect(original.random_correct).toBeGreaterThan(0);
  });

  it.each(['original', 'no_random', 'tiger', 'lenient'] as const)(
    'multi_chat, 5-shot, scoring %s: counts, files and report as scripted',
    async (profile) => {
      const server = await startFakeServer((r) => ({ content: scriptedReply(questionFor(r)) }));
      const out = path.join(scratch.dir, `multi-${profile}`);
      try {
        const summary = await runMmluPro(
          testConfig(server.url, out, {
            category: CATEGORIES.join(','),
            subset: SUBSET,
            cot: true,
            parallel: 4,
            scoring: profile,
          }),
        );

        expect(summary.scoring).toBe(profile);
        for (const category of CATEGORIES) {
          const score = summary.categories.find((c) => c.category === category)!;
          expect(score).toMatchObject(
            expectedCounts(
              selected.filter((q) => q.category === category),
              profile,
            ),
          );
        }
        const overall = expectedCounts(selected, profile);
        expect(summary.overall).toMatchObject(overall);
        expect(summary.overall.accuracy).toBe(overall.correct / overall.total);
        expect(summary.overall.adjusted_accuracy).toBe(
          (overall.correct - overall.random_correct) / (overall.total - overall.random_guesses),
        );
        expect(summary.overall.unparsed_rate).toBe(overall.no_answer / overall.total);
        expect(summary).toMatchObject({ asked: selected.length, skipped: 0, failed: [] });

        // Each question asked once, with the reference's request parameters.
        expect(server.requests.map((r) => r.question).sort()).toEqual(selected.map((q) => q.question).sort());
        for (const r of server.requests) {
          expect(r.endpoint).toBe('chat');
          expect(r.body).toMatchObject({
            model: 'fake-model',
            temperature: 0,
            top_p: 1,
            max_tokens: 1024,
            stop: [],
            frequency_penalty: 0,
            presence_penalty: 0,
          });
          expect(r.body.messages).toHaveLength(12);
        }

        // Token usage as the server reported it (words of the prompt and of the reply).
        const promptWords = server.requests.map((r) =>
          countWords((r.body.messages as { content: string }[]).map((m) => m.content).join('\n')),
        );
        const replyWords = selected.map((q) => countWords(scriptedReply(q)));
        expect(summary.tokens).toMatchObject({
          requests: selected.length,
          prompt: {
            total: promptWords.reduce((a, b) => a + b),
            min: Math.min(...promptWords),
            max: Math.max(...promptWords),
          },
          completion: { total: replyWords.reduce((a, b) => a + b) },
        });

        // Result files: one record per question with the profile's letter; summaries in the original's shape.
        for (const category of CATEGORIES) {
          const records = readJson(path.join(out, `${category}_result.json`)) as {
            question_id: number;
            pred: string | null;
            response: string;
          }[];
          const expected = selected.filter((q) => q.category === category);
          expect(records.map((r) => r.question_id)).toEqual(expected.map((q) => q.question_id));
          for (const [i, r] of records.entries()) {
            expect(r.pred).toBe(expectedPred(expected[i]!, profile));
            expect(r.response).toBe(scriptedReply(expected[i]!));
          }
          const c = expectedCounts(expected, profile);
          const wrong = c.total - c.correct;
          const acc = c.correct / c.total;
          expect(readJson(path.join(out, `${category}_summary.json`))).toEqual(
            profile === 'no_random'
              ? {
                  [category]: { corr: c.correct, wrong, no_answer: c.no_answer, acc },
                  total: { corr: c.correct, wrong, acc, no_answer: c.no_answer },
                }
              : {
                  [category]: { corr: c.correct, wrong, acc },
                  random: { corr: c.random_correct, wrong: c.random_guesses - c.random_correct },
                  total: { corr: c.correct, wrong, acc },
                },
          );
        }
        const report = readFileSync(path.join(out, 'report.txt'), 'utf8');
        expect(report).toMatch(
          new RegExp(
            `\nFinished the benchmark in 0 hours, 0 minutes, \\d+ seconds\\.\nTotal, ${overall.correct}/${overall.total}, ${pct(overall.correct, overall.total)}%\n`,
          ),
        );
        if (profile === 'no_random')
          expect(report).toContain(
            `Total, ${overall.correct}/${overall.total}, ${pct(overall.correct, overall.total)}%\nNo Answer, ${overall.no_answer}/${overall.total}, ${pct(overall.no_answer, overall.total)}%\nToken Usage:`,
          );
        const randomWrong = overall.random_guesses - overall.random_correct;
        if (overall.random_correct > 0 && randomWrong > 0) {
          expect(report).toContain(
            `Random Guess Attempts, ${overall.random_guesses}/${overall.total}, ${pct(overall.random_guesses, overall.total)}%`,
          );
          expect(report).toContain(
            `Correct Random Guesses, ${overall.random_correct}/${overall.random_guesses}, ${pct(overall.random_correct, overall.random_guesses)}%`,
          );
        }
        expect(report).toContain('| overall | math | law | history |\n| ------- | ---- | --- | ------- |');
        expect(readJson(path.join(out, 'run.json'))).toMatchObject({
          version: '0.1.0',
          config: { test: { scoring: profile } },
          data: { test: [{ name: 'test-00000-of-00001.parquet', rows: 168 }] },
        });
        expect(readJson(path.join(out, 'summary.json'))).toMatchObject({ scoring: profile, overall });
        expect(readdirSync(out).filter((f) => f.includes('journal') || f.endsWith('.tmp'))).toEqual([]);
      } finally {
        await server.close();
      }
    },
  );

  it('no_chat, zero-shot: /v1/completions with plain text; a rerun asks nothing and reports the same', async () => {
    const server = await startFakeServer((r) => ({ content: scriptedReply(questionFor(r)) }));
    const out = path.join(scratch.dir, 'no-chat');
    try {
      const config = testConfig(server.url, out, {
        category: CATEGORIES.join(','),
        subset: SUBSET,
        style: 'no_chat',
        parallel: 2,
      });
      const first = await runMmluPro(config);
      expect(first.overall).toMatchObject(expectedCounts(selected));
      expect(server.requests.every((r) => r.endpoint === 'completions')).toBe(true);
      const prompt = server.requests[0]!.body.prompt as string;
      expect(prompt.startsWith('You are an expert that knows everything. ')).toBe(true);
      expect(prompt.endsWith("\nAnswer: Let's think step by step.")).toBe(true);
      expect(prompt.match(/Question: /g)).toHaveLength(1);

      const again = await runMmluPro(config);
      expect(server.requests).toHaveLength(selected.length);
      expect(again).toMatchObject({ asked: 0, skipped: selected.length, overall: first.overall });
    } finally {
      await server.close();
    }
  });

  it('retries errors with backoff, reports what still fails without scoring it, and a rerun asks only those', async () => {
    const [alwaysFails, failsOnce, tooSlow] = selected;
    let healthy = false;
    const flaky = (r: FakeRequest): FakeReply => {
      const q = questionFor(r);
      if (healthy) return { content: scriptedReply(q) };
      if (q === alwaysFails) return { content: 'overloaded', status: 500, headers: { 'retry-after-ms': '1' } };
      if (q === failsOnce && r.attempt === 1)
        return { content: 'busy', status: 503, headers: { 'retry-after-ms': '1' } };
      if (q === tooSlow) return { content: scriptedReply(q), delayMs: 10_000 };
      return { content: scriptedReply(q) };
    };
    const server = await startFakeServer(flaky);
    const out = path.join(scratch.dir, 'errors');
    try {
      const config = testConfig(
        server.url,
        out,
        { category: CATEGORIES.join(','), subset: SUBSET, parallel: 4, timeout: 1 },
        { server: { max_retries: 1 } },
      );
      const summary = await runMmluPro(config);
      expect(summary.failed.map((f) => [f.question_id, f.kind, f.status])).toEqual(
        expect.arrayContaining([
          [alwaysFails!.question_id, 'http', 500],
          [tooSlow!.question_id, 'timeout', null],
        ]),
      );
      expect(summary.failed).toHaveLength(2);
      const attempts = (q: Question) => server.requests.filter((r) => r.question === q.question).length;
      expect(attempts(alwaysFails!)).toBe(2); // the first try and one retry
      expect(attempts(failsOnce!)).toBe(2);
      expect(attempts(tooSlow!)).toBe(2);
      // Failed questions are neither scored nor written.
      const answered = selected.filter((q) => q !== alwaysFails && q !== tooSlow);
      expect(summary.overall).toMatchObject(expectedCounts(answered));
      const mathRecords = readJson(path.join(out, 'math_result.json')) as { question_id: number }[];
      expect(mathRecords.map((r) => r.question_id)).not.toContain(alwaysFails!.question_id);
      expect(
        (readJson(path.join(out, 'summary.json')) as { failed: { question_id: number }[] }).failed
          .map((f) => f.question_id)
          .sort(),
      ).toEqual([alwaysFails!.question_id, tooSlow!.question_id].sort());

      // The server recovers: the same command asks only the two failed questions.
      healthy = true;
      const before = server.requests.length;
      const rerun = await runMmluPro(config);
      expect(
        server.requests
          .slice(before)
          .map((r) => r.question)
          .sort(),
      ).toEqual([alwaysFails!.question, tooSlow!.question].sort());
      expect(rerun).toMatchObject({ asked: 2, failed: [], overall: expectedCounts(selected) });
    } finally {
      await server.close();
    }
  });

  it('stops with a clear error when the server cannot be reached or refuses, keeping what was answered', async () => {
    const server = await startFakeServer(() => ({ content: 'x' }));
    const url = server.url;
    await server.close();
    const out = path.join(scratch.dir, 'unreachable');
    await expect(
      runMmluPro(testConfig(url, out, { category: 'math', subset: 2 }, { server: { max_retries: 0 } })),
    ).rejects.toThrow(FatalServerError);
    await expect(
      runMmluPro(testConfig(url, out, { category: 'math', subset: 2 }, { server: { max_retries: 0 } })),
    ).rejects.toThrow(/cannot reach .*rerun the same command to resume/s);

    let calls = 0;
    const refusing = await startFakeServer(() =>
      ++calls > 2 ? { content: 'no such model', status: 404 } : { content: 'The answer is (A).' },
    );
    const out404 = path.join(scratch.dir, 'not-found');
    try {
      await expect(runMmluPro(testConfig(refusing.url, out404, { category: 'math', subset: 5 }))).rejects.toThrow(
        /refused the request \(404\)/,
      );
      expect(readJson(path.join(out404, 'math_result.json'))).toHaveLength(2);
    } finally {
      await refusing.close();
    }
  });

  it('refuses to resume a folder written with other settings (another URL, style, shots, scoring), and changes nothing', async () => {
    const server = await startFakeServer((r) => ({ content: scriptedReply(questionFor(r)) }));
    const out = path.join(scratch.dir, 'settings');
    try {
      await runMmluPro(testConfig(server.url, out, { category: 'math', subset: 2 }));
      const before = readFileSync(path.join(out, 'run.json'), 'utf8');
      await expect(
        runMmluPro(testConfig(server.url, out, { category: 'math', subset: 2, style: 'single_chat', cot: true })),
      ).rejects.toThrow(
        /other settings \(style: "multi_chat" → "single_chat"; cot: false → true; validation_sha256: \[\] → \["[0-9a-f]{64}"\]\)/,
      );
      await expect(
        runMmluPro(testConfig('http://127.0.0.1:9/v1', out, { category: 'math', subset: 2 })),
      ).rejects.toThrow(/other settings \(url: /);
      await expect(
        runMmluPro(testConfig(server.url, out, { category: 'math', subset: 2, scoring: 'lenient' })),
      ).rejects.toThrow(/other settings \(scoring: "original" → "lenient"\)/);
      expect(readFileSync(path.join(out, 'run.json'), 'utf8')).toBe(before);
      expect(server.requests).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});
