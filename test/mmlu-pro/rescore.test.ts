// `mmlu-pro rescore DIR --scoring P` equals a fresh run under P, without asking the server again.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareFolders } from '../../mmlu-pro/compare.ts';
import { loadDataset, selectQuestions, type Question } from '../../mmlu-pro/data.ts';
import { startFakeServer, type FakeServer } from '../../mmlu-pro/fake-server.ts';
import { rescoreFolder } from '../../mmlu-pro/rescore.ts';
import { runMmluPro, type RunSummary } from '../../mmlu-pro/runner.ts';
import { DATA_DIR, scratchDir, testConfig } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);
const CATEGORIES = ['biology', 'law'] as const;

let server: FakeServer;
let questions: Question[] = [];
let original: RunSummary;
const originalDir = path.join(scratch.dir, 'original');

// Replies on which the profiles disagree: lower-case letters, "[c]" brackets, a letter glued to a word, nothing.
function reply(q: Question): string {
  const i = questions.indexOf(q);
  const forms = [
    `The answer is (${q.answer})`,
    `The answer is (${q.answer.toLowerCase()})`,
    `The answer is [${q.answer.toLowerCase()}]`,
    `The answer is Because... so (${q.answer})`,
    'No idea.',
  ];
  return forms[i % forms.length]!;
}

const run = (out: string, scoring: 'original' | 'tiger' | 'lenient') =>
  runMmluPro(
    testConfig(server.url, out, { category: CATEGORIES.join(','), subset: 10, parallel: 3, log_prompt: true, scoring }),
  );

beforeAll(async () => {
  const { test } = await loadDataset(DATA_DIR, 'en', false);
  questions = [...selectQuestions(test, [...CATEGORIES], 10).values()].flat();
  server = await startFakeServer((r) => ({ content: reply(questions.find((q) => q.question === r.question)!) }));
  original = await run(originalDir, 'original');
});
afterAll(async () => {
  await server?.close();
});

const read = (dir: string, name: string) => readFileSync(path.join(dir, name), 'utf8');
/** report.txt's score lines and table, without the times (a rescore asks nothing, so it takes 0 seconds). */
const scoreLines = (report: string) =>
  report
    .split('\n')
    .filter((line) => !line.startsWith('Finished') && !/tokens: |^Token Usage:/.test(line))
    .join('\n');

describe('mmlu-pro rescore', () => {
  it.each(['tiger', 'lenient'] as const)(
    'rescoring under %s equals a fresh run under it, without a request',
    async (profile) => {
      const requestsBefore = server.requests.length;
      const rescored = rescoreFolder(originalDir, profile);
      expect(server.requests.length).toBe(requestsBefore);
      expect(rescored.output_dir).toBe(`${originalDir}-${profile}`);

      const fresh = await run(path.join(scratch.dir, `fresh-${profile}`), profile);
      expect(rescored.scoring).toBe(profile);
      expect(rescored.overall).toEqual(fresh.overall);
      expect(rescored.categories).toEqual(fresh.categories);
      for (const category of CATEGORIES) {
        expect(read(rescored.output_dir, `${category}_result.json`)).toBe(
          read(fresh.output_dir, `${category}_result.json`),
        );
        expect(read(rescored.output_dir, `${category}_summary.json`)).toBe(
          read(fresh.output_dir, `${category}_summary.json`),
        );
      }
      expect(scoreLines(read(rescored.output_dir, 'report.txt'))).toBe(
        scoreLines(read(fresh.output_dir, 'report.txt')),
      );
      expect(JSON.parse(read(rescored.output_dir, 'run.json'))).toMatchObject({
        rescored_from: originalDir,
        config: { test: { scoring: profile } },
        settings: { scoring: profile },
      });
    },
  );

  it('the profiles really differ on these replies', () => {
    const lenient = rescoreFolder(originalDir, 'lenient', path.join(scratch.dir, 'again-lenient'));
    expect(lenient.overall.random_guesses).toBeLessThan(original.overall.random_guesses);
    // Rescoring back to the original gives the original's numbers.
    expect(rescoreFolder(lenient.output_dir, 'original', path.join(scratch.dir, 'back')).overall).toEqual(
      original.overall,
    );
  });

  it('compare refuses folders of different profiles unless told, and pairs them when told', () => {
    const lenientDir = path.join(scratch.dir, 'for-compare');
    rescoreFolder(originalDir, 'lenient', lenientDir);
    expect(() => compareFolders(originalDir, lenientDir)).toThrow(
      /scored "original" .* "lenient"; rescore one .* --allow_different_scoring/,
    );
    const c = compareFolders(originalDir, lenientDir, { allowDifferentScoring: true });
    expect(c.scoring).toEqual({ a: 'original', b: 'lenient' });
    expect(c.overall.paired).toBe(20);
    expect(c.overall.b_only_correct).toBeGreaterThan(0);
  });

  it('refuses a folder without run.json, an occupied output folder, and rescoring in place', () => {
    const bare = path.join(scratch.dir, 'bare');
    mkdirSync(bare);
    expect(() => rescoreFolder(bare, 'lenient')).toThrow(/has no run.json/);
    const occupied = path.join(scratch.dir, 'occupied');
    mkdirSync(occupied);
    writeFileSync(path.join(occupied, 'x'), '');
    expect(() => rescoreFolder(originalDir, 'lenient', occupied)).toThrow(/is not empty/);
    expect(() => rescoreFolder(originalDir, 'lenient', originalDir)).toThrow(/must differ/);
  });
});
