// The command line: `node bin/iwibench.js mmlu-pro …` in a child process (killed mid-run), and its `main` in-process.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadDataset, selectQuestions, type Question } from '../../mmlu-pro/data.ts';
import { startFakeServer, type FakeRequest } from '../../mmlu-pro/fake-server.ts';
import { questionKey, ResultStore } from '../../mmlu-pro/results.ts';
import { runMmluPro } from '../../mmlu-pro/runner.ts';
import { main } from '../../scripts/mmlu-pro.ts';
import { DATA_DIR, REPO_ROOT, scratchDir, testConfig } from './helpers.ts';

const scratch = scratchDir();
afterAll(scratch.remove);

let selected: Question[] = [];
beforeAll(async () => {
  const { test } = await loadDataset(DATA_DIR, 'en', false);
  selected = [...selectQuestions(test, ['math', 'law'], 8).values()].flat();
});

function answerRight(r: FakeRequest) {
  const q = selected.find((s) => s.question === r.question);
  return `The answer is (${q?.answer ?? 'A'}).`;
}

function cli(
  args: string[],
  cwd = REPO_ROOT,
): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'bin/iwibench.js'), 'mmlu-pro', ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

const runArgs = (url: string, out: string) => [
  '--url',
  url,
  '--model',
  'fake-model',
  '--data_dir',
  DATA_DIR,
  '--output_dir',
  out,
  '--category',
  'math,law',
  '--subset',
  '8',
  '--parallel',
  '2',
];

/** What `fn` writes to stdout and stderr, kept out of the test log. */
async function captureOutput(fn: () => Promise<void>): Promise<{ stdout: string; stderr: string }> {
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    await fn();
    const text = (spy: typeof out) => spy.mock.calls.map((call) => String(call[0])).join('');
    return { stdout: text(out), stderr: text(err) };
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('npx iwibench mmlu-pro', () => {
  it('resumes after SIGKILL: nothing lost or duplicated, answered questions not asked again', async () => {
    const out = path.join(scratch.dir, 'killed');
    let delayMs = 300; // slow while the child runs, instant for the rerun
    const server = await startFakeServer((r) => ({ content: answerRight(r), delayMs }));
    const journalLines = () =>
      ['math', 'law']
        .map((c) => path.join(out, `${c}_result.journal.jsonl`))
        .filter(existsSync)
        .reduce((n, f) => n + readFileSync(f, 'utf8').split('\n').filter(Boolean).length, 0);
    try {
      const first = cli(runArgs(server.url, out));
      await waitFor(() => journalLines() >= 4, 30_000);
      first.child.kill('SIGKILL');
      expect((await first.done).code).toBe(null);
      await new Promise((r) => setTimeout(r, 200)); // requests already on the wire reach the server
      const store = new ResultStore(out);
      const answeredBeforeKill = new Set(['math', 'law'].flatMap((c) => store.read(c)).map(questionKey));
      expect(answeredBeforeKill.size).toBeGreaterThanOrEqual(4);
      expect(answeredBeforeKill.size).toBeLessThan(selected.length);

      // The rerun goes through the same entry point in-process (a second child would only add start-up time).
      delayMs = 0;
      const before = server.requests.length;
      const { stdout } = await captureOutput(() => main([...runArgs(server.url, out), '--json']));
      const summary = JSON.parse(stdout);
      const askedAgain = server.requests.slice(before).map((r) => selected.find((q) => q.question === r.question)!);
      expect(askedAgain.filter((q) => answeredBeforeKill.has(questionKey(q)))).toEqual([]);
      expect(askedAgain).toHaveLength(selected.length - answeredBeforeKill.size);
      expect(summary).toMatchObject({
        skipped: answeredBeforeKill.size,
        asked: askedAgain.length,
        overall: { total: 16, correct: 16 },
      });
      for (const category of ['math', 'law']) {
        const ids = (
          JSON.parse(readFileSync(path.join(out, `${category}_result.json`), 'utf8')) as { question_id: number }[]
        ).map((r) => r.question_id);
        expect(ids).toEqual(selected.filter((q) => q.category === category).map((q) => q.question_id));
      }
      expect(readdirSync(out).filter((f) => f.includes('journal') || f.endsWith('.tmp'))).toEqual([]);
      // Once more, with every question answered: without --json, the summary names the folder and the figures.
      const { stdout: text } = await captureOutput(() => main(runArgs(server.url, out)));
      expect(text).toBe(
        [
          'mmlu-pro:',
          `  wrote ${out} (results per category, report.txt, run.json)`,
          '  accuracy 1.000 over 16 questions (adjusted 1.000, unparsed 0.000), scoring original',
          '  0 asked, 16 already answered, 0 failed',
          '',
        ].join('\n'),
      );
    } finally {
      await server.close();
    }
  });

  it('bad input is a clear error, exit status 1, and writes nothing', async () => {
    const out = path.join(scratch.dir, 'bad');
    const { code, stderr, stdout } = await cli(['--model', 'm', '--category', 'astrology', '--output_dir', out]).done;
    expect(code).toBe(1);
    expect(stderr).toMatch(/unknown category "astrology"/);
    expect(stdout).toBe('');
    // The same checks in-process (cli.ts turns a rejection into the message and exit status 1, as above).
    const cases: [string[], RegExp][] = [
      [
        ['--model', 'm', '--parallel', 'many', '-v', 'x'],
        /--parallel must be a number, got "many"\n--verbosity must be a number, got "x"/,
      ],
      [['--model', 'm', '--scoring', 'strict'], /--scoring\) must be one of original, no_random, tiger, lenient/],
      [
        ['rescore'],
        /rescore needs one result folder, got 0\n--scoring must be one of original, no_random, tiger, lenient, got null/,
      ],
      [['--model', 'm', '--no-such-flag'], /Unknown option '--no-such-flag'/],
      [['--model', 'm', '--config', path.join(out, 'none.toml')], /cannot read config file/],
      [['--model', 'm', '--data_dir', path.join(scratch.dir, 'nowhere')], /is not a folder/],
      [['--model', 'm', '--cot', '--language', 'ko', '--data_dir', DATA_DIR], /no test data for language "ko"/],
      [['compare', out], /compare needs two result folders/],
    ];
    const sub = (args: string[]) => args[0] === 'compare' || args[0] === 'rescore';
    for (const [args, message] of cases)
      await expect(main([...args, ...(sub(args) ? [] : ['--output_dir', out])])).rejects.toThrow(message);
    expect(existsSync(out)).toBe(false);
  });

  it('-h lists every flag of the original with its short form, and ours; each subcommand has its help', async () => {
    const { stdout } = await captureOutput(() => main(['-h']));
    for (const flag of [
      '-c, --config',
      '-u, --url',
      '-a, --api',
      '-m, --model',
      '-p, --parallel',
      '-v, --verbosity',
      '-h, --help',
    ])
      expect(stdout).toContain(flag);
    for (const flag of [
      'model_note',
      'timeout',
      'category',
      'cot',
      'language',
      'log_prompt',
      'scoring',
      'style',
      'subset',
      'data_dir',
      'output_dir',
      'comment',
    ]) {
      expect(stdout).toContain(`--${flag}`);
    }
    expect(stdout).toMatch(/example: npx iwibench mmlu-pro /);
    expect((await captureOutput(() => main(['compare', '--help']))).stdout).toContain('--allow_different_scoring');
    expect((await captureOutput(() => main(['rescore', '-h']))).stdout).toContain('--scoring VALUE');
  });

  it('short forms, --category repeated, and ./config.toml read by default from the working folder', async () => {
    const server = await startFakeServer((r) => ({ content: answerRight(r) }));
    const work = path.join(scratch.dir, 'work');
    mkdirSync(work);
    // The working folder's config.toml names the server, one category and a subset-sized run; flags add to it.
    writeFileSync(
      path.join(work, 'config.toml'),
      `[server]\nurl = "${server.url}"\nmodel = "from-config"\nmodel_note = "note"\n[test]\ncategories = ['history']\nsubset = 2\ndata_dir = "${DATA_DIR}"\n`,
    );
    try {
      const child = await cli(
        ['--category', 'math', '--category', 'law', '-p', '2', '-v', '0', '--subset', '3', '--json'],
        work,
      ).done;
      expect(child.stderr).toMatch(/config config\.toml/);
      expect(child.code).toBe(0);
      const summary = JSON.parse(child.stdout);
      expect(summary).toMatchObject({
        model: 'from-config',
        scoring: 'original',
        output_dir: path.join('eval_results_en', 'from-config-note'),
      });
      expect(summary.categories.map((c: { category: string }) => c.category)).toEqual(['math', 'law']);
      expect(existsSync(path.join(work, 'eval_results_en', 'from-config-note', 'law_summary.json'))).toBe(true);

      // -c another file, -u and -m over it.
      const other = path.join(scratch.dir, 'other.toml');
      writeFileSync(other, `[server]\nurl = "http://127.0.0.1:9/v1"\nmodel = "nope"\n[test]\ncot = false\n`);
      const out = path.join(scratch.dir, 'short-forms');
      const { stdout } = await captureOutput(() =>
        main([
          '-c',
          other,
          '-u',
          server.url,
          '-m',
          'short',
          '--category',
          'math,law',
          '--subset',
          '2',
          '--data_dir',
          DATA_DIR,
          '--output_dir',
          out,
          '--json',
        ]),
      );
      expect(JSON.parse(stdout)).toMatchObject({ model: 'short', overall: { total: 4, correct: 4 } });
      // As run_openai.py 6c0efcf: -m sets the model note too; --model_note and --language without --cot set nothing.
      expect(JSON.parse(readFileSync(path.join(out, 'run.json'), 'utf8')).config).toMatchObject({
        server: { url: server.url, model: 'short', model_note: 'short' },
        test: { cot: false, language: 'en' },
      });
      const ignored = path.join(scratch.dir, 'ignored-flags');
      const quirks = await captureOutput(() =>
        main([
          '-c',
          other,
          '-u',
          server.url,
          '--model_note',
          'n',
          '--language',
          'ko',
          '-p',
          '0',
          '--category',
          'math',
          '--subset',
          '1',
          '--data_dir',
          DATA_DIR,
          '--output_dir',
          ignored,
          '--json',
        ]),
      );
      expect(JSON.parse(quirks.stdout).run.config).toMatchObject({
        server: { model: 'nope', model_note: 'LORA' },
        test: { language: 'en', parallel: 16 },
      });
      expect(quirks.stderr).toMatch(/--model_note is ignored/);
      expect(quirks.stderr).toMatch(/--language is ignored without --cot/);
    } finally {
      await server.close();
    }
  });

  it('compare prints a summary (--json: one JSON object) on stdout and the table on stderr', async () => {
    const out = path.join(scratch.dir, 'for-compare');
    const server = await startFakeServer((r) => ({ content: answerRight(r) }));
    try {
      await runMmluPro(testConfig(server.url, out, { category: 'math,law', subset: 8, log_prompt: true }));
    } finally {
      await server.close();
    }
    const { stdout, stderr } = await captureOutput(() => main(['compare', out, out, '--json']));
    expect(JSON.parse(stdout)).toMatchObject({ overall: { paired: 16, difference: 0, p_value: 1 } });
    expect((await captureOutput(() => main(['compare', out, out]))).stdout).toBe(
      `mmlu-pro compare:\n  accuracy 1.000 in ${out}, 1.000 in ${out} over 16 paired questions: difference 0.000, McNemar p 1.000\n`,
    );
    expect(stderr).toContain('| overall | 16 | 100.00 | 100.00 | +0.00 | 0 | 0 | 1.00 |');
    expect(stderr).toContain('(scoring original)');
    const records = JSON.parse(readFileSync(path.join(out, 'math_result.json'), 'utf8'));
    expect(records[0].prompt[0]).toMatchObject({ role: 'system' }); // log_prompt keeps the messages
  });
});
