// Runs against a fake OpenAI-compatible server (real HTTP on 127.0.0.1, the real `openai` client) whose answers are
// scripted per question, so every reported count is known in advance.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FatalServerError } from '../../mmlu-pro/client.ts';
import { loadDataset, selectQuestions, type Category, type Question } from '../../mmlu-pro/data.ts';
import { countWords, startFakeServer, type FakeReply, type FakeRequest } from '../../mmlu-pro/fake-server.ts';
import { runMmluPro } from '../../mmlu-pro/runner.ts';
import { guessIndex } from '../../mmlu-pro/score.ts';
import { DATA_DIR, scratchDir, testConfig } from './helpers.ts';

const CATEGORIES: Category[] = ['math', 'law', 'history'];
const SUBSET = 5;
const LETTERS = 'ABCDEFGHIJ';

let selected: Question[] = [];
const scratch = scratchDir();
afterAll(scratch.remove);

beforeAll(async () => {
  const { test } = await loadDataset(DATA_DIR, 'en', false);
  selected = [...selectQuestions(test, CATEGORIES, SUBSET).values()].flat();
});

/** Per position in its category: right (capital), right (lower case), wrong, then no letter at all. */
type Kind = 'right' | 'right-lower' | 'wrong' | 'unparsable';
function kindOf(q: Question): Kind {
  const position = selected.filter((s) => s.category === q.category).indexOf(q);
  return (['right', 'right-lower', 'wrong'] as const)[position] ?? 'unparsable';
}

function scriptedReply(q: Question): string {
  const wrong = LETTERS[(q.answer_index + 1) % q.options.length];
  switch (kindOf(q)) {
    case 'right':
      return `Let's think step by step. It follows that the answer is (${q.answer}).`;
    case 'right-lower':
      return `The answer is (${q.answer.toLowerCase()})`;
    case 'wrong':
      return `The answer is (${wrong}).`;
    case 'unparsable':
      return 'No idea, sorry.';
  }
}

/** What the report must say, worked out from the script alone. */
function expectedCounts(questions: Question[]) {
  const guessed = questions.filter((q) => kindOf(q) === 'unparsable');
  const randomCorrect = guessed.filter((q) => guessIndex(q.question_id, q.options.length) === q.answer_index).length;
  const right = questions.filter((q) => kindOf(q) === 'right' || kindOf(q) === 'right-lower').length;
  return { total: questions.length, correct: right + randomCorrect, random_guesses: guessed.length, random_correct: randomCorrect };
}

function questionFor(request: FakeRequest): Question {
  const q = selected.find((s) => s.question === request.question);
  if (!q) throw new Error(`fake server: unexpected question ${request.question?.slice(0, 60)}`);
  return q;
}

function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, 'utf8'));
}

describe('a run against a fake OpenAI-compatible server', () => {
  it('multi_chat, 5-shot: the reported counts equal the scripted ones, and files hold every answer', async () => {
    const server = await startFakeServer((r) => ({ content: scriptedReply(questionFor(r)) }));
    const out = path.join(scratch.dir, 'multi');
    try {
      const summary = await runMmluPro(testConfig(server.url, out, { category: CATEGORIES.join(','), subset: SUBSET, cot: true, parallel: 4 }));

      for (const category of CATEGORIES) {
        const score = summary.categories.find((c) => c.category === category)!;
        expect(score).toMatchObject(expectedCounts(selected.filter((q) => q.category === category)));
      }
      const overall = expectedCounts(selected);
      expect(summary.overall).toMatchObject(overall);
      expect(summary.overall.accuracy).toBe(overall.correct / overall.total);
      expect(summary.overall.adjusted_accuracy).toBe((overall.correct - overall.random_correct) / (overall.total - overall.random_guesses));
      expect(summary.overall.unparsed_rate).toBe(overall.random_guesses / overall.total);
      expect(summary).toMatchObject({ asked: selected.length, skipped: 0, failed: [] });

      // Each question asked once, with the reference's request parameters.
      expect(server.requests.map((r) => r.question).sort()).toEqual(selected.map((q) => q.question).sort());
      for (const r of server.requests) {
        expect(r.endpoint).toBe('chat');
        expect(r.body).toMatchObject({ model: 'fake-model', temperature: 0, top_p: 1, max_tokens: 2048, stop: ['Question:'], frequency_penalty: 0, presence_penalty: 0 });
        expect(r.body.messages).toHaveLength(12);
      }

      // Token usage as the server reported it (words of the prompt and of the reply).
      const promptWords = server.requests.map((r) => countWords((r.body.messages as { content: string }[]).map((m) => m.content).join('\n')));
      const replyWords = selected.map((q) => countWords(scriptedReply(q)));
      expect(summary.tokens).toMatchObject({
        requests: selected.length,
        prompt: { total: promptWords.reduce((a, b) => a + b), min: Math.min(...promptWords), max: Math.max(...promptWords) },
        completion: { total: replyWords.reduce((a, b) => a + b) },
      });

      // Result files: one record per question with the extracted letter; summaries with raw counts.
      for (const category of CATEGORIES) {
        const records = readJson(path.join(out, `${category}_result.json`)) as { question_id: number; pred: string | null; response: string }[];
        const expected = selected.filter((q) => q.category === category);
        expect(records.map((r) => r.question_id)).toEqual(expected.map((q) => q.question_id));
        for (const [i, r] of records.entries()) {
          const q = expected[i]!;
          const kind = kindOf(q);
          expect(r.pred).toBe(kind === 'unparsable' ? null : kind === 'wrong' ? LETTERS[(q.answer_index + 1) % q.options.length] : q.answer);
          expect(r.response).toBe(scriptedReply(q));
        }
        expect(readJson(path.join(out, `${category}_summary.json`))).toMatchObject(expectedCounts(expected));
      }
      const report = readFileSync(path.join(out, 'report.txt'), 'utf8');
      expect(report).toContain(`Total, ${overall.correct}/${overall.total}, ${((overall.correct / overall.total) * 100).toFixed(2)}%`);
      expect(report).toContain(`Random Guess Attempts (unparsed), ${overall.random_guesses}/${overall.total}`);
      expect(report).toContain('| overall | math | law | history |\n| ------- | ---- | --- | ------- |');
      expect(readJson(path.join(out, 'run.json'))).toMatchObject({ version: '0.1.0', data: { test: [{ name: 'test-00000-of-00001.parquet', rows: 12_032 }] } });
      expect(readdirSync(out).filter((f) => f.includes('journal') || f.endsWith('.tmp'))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('no_chat, zero-shot: /v1/completions with plain text; a rerun asks nothing and reports the same', async () => {
    const server = await startFakeServer((r) => ({ content: scriptedReply(questionFor(r)) }));
    const out = path.join(scratch.dir, 'no-chat');
    try {
      const config = testConfig(server.url, out, { category: CATEGORIES.join(','), subset: SUBSET, style: 'no_chat', parallel: 2 });
      const first = await runMmluPro(config);
      expect(first.overall).toMatchObject(expectedCounts(selected));
      expect(server.requests.every((r) => r.endpoint === 'completions')).toBe(true);
      const prompt = server.requests[0]!.body.prompt as string;
      expect(prompt.startsWith('The following are multiple choice questions (with answers) about ')).toBe(true);
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
      if (q === failsOnce && r.attempt === 1) return { content: 'busy', status: 503, headers: { 'retry-after-ms': '1' } };
      if (q === tooSlow) return { content: scriptedReply(q), delayMs: 10_000 };
      return { content: scriptedReply(q) };
    };
    const server = await startFakeServer(flaky);
    const out = path.join(scratch.dir, 'errors');
    try {
      const config = testConfig(server.url, out, { category: CATEGORIES.join(','), subset: SUBSET, parallel: 4, timeout: 1 }, { server: { max_retries: 1 } });
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
      expect(readJson(path.join(out, 'math_summary.json'))).toMatchObject({ failed: [{ question_id: alwaysFails!.question_id }, { question_id: tooSlow!.question_id }] });

      // The server recovers: the same command asks only the two failed questions.
      healthy = true;
      const before = server.requests.length;
      const rerun = await runMmluPro(config);
      expect(server.requests.slice(before).map((r) => r.question).sort()).toEqual([alwaysFails!.question, tooSlow!.question].sort());
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
    await expect(runMmluPro(testConfig(url, out, { category: 'math', subset: 2 }, { server: { max_retries: 0 } }))).rejects.toThrow(FatalServerError);
    await expect(runMmluPro(testConfig(url, out, { category: 'math', subset: 2 }, { server: { max_retries: 0 } }))).rejects.toThrow(/cannot reach .*rerun the same command to resume/s);

    let calls = 0;
    const refusing = await startFakeServer(() => (++calls > 2 ? { content: 'no such model', status: 404 } : { content: 'The answer is (A).' }));
    const out404 = path.join(scratch.dir, 'not-found');
    try {
      await expect(runMmluPro(testConfig(refusing.url, out404, { category: 'math', subset: 5 }))).rejects.toThrow(/refused the request \(404\)/);
      expect(readJson(path.join(out404, 'math_result.json'))).toHaveLength(2);
    } finally {
      await refusing.close();
    }
  });

  it('refuses to resume a folder written with other settings (another URL, style, shots), and changes nothing', async () => {
    const server = await startFakeServer((r) => ({ content: scriptedReply(questionFor(r)) }));
    const out = path.join(scratch.dir, 'settings');
    try {
      await runMmluPro(testConfig(server.url, out, { category: 'math', subset: 2 }));
      const before = readFileSync(path.join(out, 'run.json'), 'utf8');
      await expect(runMmluPro(testConfig(server.url, out, { category: 'math', subset: 2, style: 'single_chat', cot: true }))).rejects.toThrow(
        /other settings \(style: "multi_chat" → "single_chat"; cot: false → true; validation_sha256: \[\] → \["bc621c/,
      );
      await expect(runMmluPro(testConfig('http://127.0.0.1:9/v1', out, { category: 'math', subset: 2 }))).rejects.toThrow(/other settings \(url: /);
      expect(readFileSync(path.join(out, 'run.json'), 'utf8')).toBe(before);
      expect(server.requests).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});
