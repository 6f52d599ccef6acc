// The command-line layer (scripts/args.ts, scripts/cli.ts): every command answers --help with its flags, defaults and
// an example; one invocation's problems are reported together, with suggestions, before any work starts.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { HelpRequested, UsageError, editDistance, nearest, parseCommand } from '../../scripts/args.ts';
import { commands } from '../../scripts/cli.ts';
import { ENGINE_PROCESS_FLAGS } from '../../engine/index.ts';
import { REPO_ROOT, fixtureCheckpoint } from '../fixtures.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin', 'iwibench.js');

/** Runs `iwibench ARGS` as a user would; resolves with the exit code whatever it is. */
async function iwibench(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return iwibenchIn(process.env, ...args);
}

async function iwibenchIn(
  env: NodeJS.ProcessEnv,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function helpOf(main: (argv: string[]) => Promise<void>, argv: string[]): Promise<string> {
  const error = await main(argv).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HelpRequested);
  return (error as HelpRequested).text;
}

describe('--help', () => {
  const own = Object.keys(commands).filter((name) => name !== 'mmlu-pro'); // mmlu-pro keeps the original's flags and help
  it.each(own)('%s --help and -h list every flag with its default, and an example', async (name) => {
    const module = (await commands[name]!.load()) as {
      main: (argv: string[]) => Promise<void>;
      command?: { defaults: Record<string, unknown> };
    };
    const text = await helpOf(module.main, ['--help']);
    expect(await helpOf(module.main, ['-h'])).toBe(text);
    expect(text).toMatch(new RegExp(`^usage: npx iwibench ${name}`));
    expect(text).toMatch(/\nexamples?:\n {2}npx iwibench /);
    if (name === 'bench') {
      // A dispatcher: each benchmark lists its own flags and defaults.
      expect(await helpOf(module.main, ['service', '--help'])).toMatch(
        /^usage: npx iwibench bench service \[flags\]\n[^]*--calls N +default: 400/,
      );
      return;
    }
    if (name === 'pilot') {
      // A dispatcher too: each queue command lists its own flags.
      for (const sub of ['enqueue', 'worker', 'status']) {
        const subcommand = (await import(`../../scripts/pilot/${sub}.ts`)) as { command: { defaults: object } };
        const subText = await helpOf(module.main, [sub, '--help']);
        expect(subText).toMatch(new RegExp(`^usage: npx iwibench pilot ${sub}`));
        expectEveryFlag(subText, subcommand.command.defaults, `pilot ${sub}`);
      }
      return;
    }
    expect(module.command).toBeDefined();
    expectEveryFlag(text, module.command!.defaults, name);
  });

  function expectEveryFlag(text: string, defaults: object, name: string): void {
    for (const [flag, value] of Object.entries(defaults)) {
      const line = text.split('\n').find((l) => l.trimStart().startsWith(`--${flag} `) || l.trim() === `--${flag}`);
      expect(line, `--${flag} in the help of ${name}`).toBeDefined();
      if (typeof value === 'number' || (typeof value === 'string' && value !== ''))
        expect(line).toContain(`default: ${value}`);
    }
  }

  it('answers through the real CLI: <command> --help, -h and help <command> alike, exit 0, on stdout', async () => {
    const [long, short, viaHelp, mmlu] = await Promise.all([
      iwibench('run-pilot', '--help'),
      iwibench('run-pilot', '-h'),
      iwibench('help', 'run-pilot'),
      iwibench('mmlu-pro', '--help'),
    ]);
    for (const run of [long, short, viaHelp]) {
      expect(run.code).toBe(0);
      expect(run.stdout).toBe(long.stdout);
    }
    expect(long.stdout).toMatch(/^iwibench run-pilot: the calibrated episodes with one editor/);
    expect(long.stdout).toMatch(/--workers N +editors at once against the one service; default: 1/);
    expect(long.stdout).toMatch(/--output-dir VALUE +.*default: runs\/pilot/);
    expect(mmlu.code).toBe(0);
    expect(mmlu.stdout).toMatch(/usage: npx iwibench mmlu-pro/);
  });

  it('runs as a program, as npx runs it, with node given the engine process flags by its first line', async () => {
    expect(readFileSync(CLI, 'utf8').split('\n')[0]).toBe(`#!/usr/bin/env -S node ${ENGINE_PROCESS_FLAGS.join(' ')}`);
    const { stdout } = await exec(CLI, ['--help'], { cwd: REPO_ROOT });
    expect(stdout).toMatch(/^usage: npx iwibench <command>/);
  });
});

describe('run-prime with a script: editor on a tiny checkpoint', () => {
  it(
    "goes on after a budget refuses the ninth run_target, scores the patch written after it, and reports the evaluations' progress",
    { timeout: 300_000 },
    async () => {
      const work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-prime-script-'));
      const runTarget = {
        tool: 'run_target',
        arguments: { sequences: [{ messages: [{ role: 'user', content: 'Hi' }] }], max_new_tokens: 1 },
      };
      const write = {
        tool: 'write_weights',
        arguments: { op: 'scale', tensor: 'model.layers.1.mlp.down_proj.weight', slice: [0], factor: 0.5 },
      };
      const script = path.join(work, 'over-ask.json');
      // Nine run_target calls against a budget of eight, then an edit, then the final reply that submits it.
      writeFileSync(script, JSON.stringify({ turns: [Array(9).fill(runTarget), [write]], final: 'Scaled one row.' }));
      const output = path.join(work, 'prime');
      const { IWIBENCH_SERVICE_URL: _u, IWIBENCH_ADMIN_TOKEN: _a, IWIBENCH_EDITOR_TOKEN: _e, ...env } = process.env;
      const run = await iwibenchIn(
        env,
        'run-prime',
        '--family',
        'local_factual_update',
        '--seed',
        '0',
        '--model-dir',
        fixtureCheckpoint('tiny'),
        '--editor-model',
        `script:${script}`,
        '--items-per-kind',
        '1',
        '--output-dir',
        output,
        '--json',
      );
      expect(run.stderr).not.toMatch(/iwibench run-prime: /); // no failure line
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout).stop_reason).toBe('final_reply');
      const results = JSON.parse(readFileSync(path.join(output, 'results.json'), 'utf8'));
      expect(results.patch.ops).toBe(1);
      expect(results.resources).toMatchObject({ turns: 3, tool_calls: 9 }); // the refused call is not charged
      const tools = readFileSync(path.join(output, 'trace.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((l) => l.type === 'tool');
      expect(tools.map((t) => t.refused_budget ?? null)).toEqual([...Array(8).fill(null), 'run_target_calls', null]);
      expect(JSON.parse(readFileSync(path.join(output, 'editor.json'), 'utf8')).refused_calls).toEqual({
        run_target: 1,
      });
      // stderr is no terminal here: a line per phase start and end from each fresh evaluation process (4 items: one
      // per kind), with the tokens per second.
      const progress = run.stderr.split('\n').filter((l) => l.startsWith('run-prime evaluation: '));
      expect(progress.filter((l) => l === 'run-prime evaluation: loading the checkpoint')).toHaveLength(2);
      for (const phase of ['pristine', 'patched']) {
        expect(progress).toContainEqual(
          expect.stringMatching(new RegExp(`^run-prime evaluation: ${phase} 0/4 items, `)),
        );
        expect(progress).toContainEqual(
          expect.stringMatching(
            new RegExp(`^run-prime evaluation: ${phase} 4/4 items, \\d+\\.\\d tokens/s \\(\\d+ s\\)$`),
          ),
        );
      }
    },
  );
});

describe('problems of an invocation', () => {
  it('are reported together, with the nearest flag name, exit 2, before any work', async () => {
    const run = await iwibench(
      'run-prime',
      '--famly',
      'local_factual_update',
      '--seed',
      '-3',
      '--api',
      'chatt',
      '--items-per-kind',
      'two',
      'extra',
    );
    expect(run.code).toBe(2);
    const lines = run.stderr.split('\n');
    expect(lines).toContain('  - unknown flag --famly (did you mean --family?)');
    expect(lines).toContain('  - --seed must be a non-negative integer, got "-3"');
    expect(lines).toContain('  - --api must be chat or responses, got "chatt" (did you mean chat?)');
    expect(lines).toContain('  - --items-per-kind must be a number, got "two"');
    expect(lines).toContain('  - --family is required');
    expect(lines).toContain('  - unexpected argument extra');
    expect(run.stderr).toMatch(/usage: npx iwibench run-prime \[flags\] \(--help for every flag\)/);
    expect(run.stdout).toBe('');
  });

  it('an API editor with no base URL needs the editor proxy on 127.0.0.1:8770: without one, one line, before any episode', async () => {
    const { OPENAI_API_KEY: _key, OPENAI_BASE_URL: _url, ...env } = process.env; // the key lives in the proxy only
    const output = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-no-proxy-')), 'prime');
    const run = await iwibenchIn(
      env,
      'run-prime',
      '--family',
      'local_factual_update',
      '--seed',
      '0',
      '--model-dir',
      fixtureCheckpoint('tiny'),
      '--editor-model',
      'some-editor',
      '--output-dir',
      output,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      "iwibench run-prime: nothing answers at http://127.0.0.1:8770/v1 (ECONNREFUSED): start `npx iwibench editor-proxy --port 8770` with the editor's key in its environment (OPENAI_API_KEY), or pass --editor-base-url\n",
    );
    expect(existsSync(output)).toBe(false); // no service, no episode, no folder
  });

  it('suggests the nearest command', async () => {
    const run = await iwibench('run-pliot');
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^iwibench: unknown command "run-pliot" \(did you mean run-pilot\?\)/);
  });

  it('parses values of every type, repeatable flags, inline values and positionals', () => {
    const spec = {
      defaults: { n: 1, name: 'x', on: false, tag: [] as string[], opt: undefined as string | undefined },
      positionals: { names: 'A', min: 1, max: 2 },
    };
    const { flags, positionals } = parseCommand(
      ['a', '--n=4', '--on', '--tag', 't1', '--tag=t2', '--name', '-', '--', '--b'],
      spec,
    );
    expect(flags).toEqual({ n: 4, name: '-', on: true, tag: ['t1', 't2'], opt: undefined });
    expect(positionals).toEqual(['a', '--b']);
    expect(() => parseCommand(['--on=yes', '--opt'], spec)).toThrow(UsageError);
    try {
      parseCommand(['--on=yes', '--opt'], spec);
    } catch (error) {
      expect((error as UsageError).problems).toEqual([
        '--on takes no value',
        '--opt needs a value',
        'expects 1 to 2 argument(s) A, got 0',
      ]);
    }
  });

  it('measures edit distance with hyphens and underscores alike, and suggests only near names', () => {
    expect(editDistance('output_dir', 'output-dir')).toBe(0);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(nearest('wokers', ['workers', 'attempts'])).toBe('workers');
    expect(nearest('colour', ['workers', 'attempts'])).toBeUndefined();
  });
});
