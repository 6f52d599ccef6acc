// The seed's (IWIBench's) README command lines, as written, with `npx iwibench` for `python scripts/…` and hyphens
// for underscores: the toy target laid out as google/gemma-3-4b-it at its pinned revision in a Hugging Face cache
// under a temporary $HF_HOME (found by default, pinned revision by default), a service found through
// IWIBENCH_SERVICE_URL, and a fake editor API (real HTTP, both OpenAI APIs) behind the editor proxy given the full
// /v1/chat/completions endpoint. As in the seed, the proxy is started with the editor's key and the runners get no
// key and no --editor-base-url: they talk to the proxy. Its port is ephemeral here (tests share the machine), so
// the runners find it through OPENAI_BASE_URL instead of the default 127.0.0.1:8770 (test/scripts/cli.test.ts
// covers the default without a proxy, test/taskset/harness/config.test.ts the check). Smoke sizes (--items-per-kind 1, a few calibration seeds, one family) keep it short.
// The commands run through bin/iwibench.js, as npx runs it, from a scratch folder: default outputs go under runs/.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PINNED_REVISIONS } from '../../engine/index.ts';
import { TOY_TARGET_DIR } from '../../toy/target.ts';
import { REPO_ROOT } from '../fixtures.ts';
import { addSnapshot } from '../hf-cache.ts';
import { API_KEY, FakeEditorApi, type FakeReply } from '../taskset/harness/fake-editor-api.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin', 'iwibench.js');
const M = 'google/gemma-3-4b-it';
const FAMILY = 'local_factual_update';
const EDITOR = 'fake-chat-editor';

let work: string;
let env: NodeJS.ProcessEnv;
let api: FakeEditorApi;
const background: ChildProcess[] = [];

/** `npx iwibench ARGS` from the scratch folder; rejects with its stderr when it fails. */
async function iwibench(...args: string[]): Promise<string> {
  return (await iwibenchWithLog(...args)).stdout;
}

async function iwibenchWithLog(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return exec(process.execPath, [CLI, ...args], { cwd: work, env, maxBuffer: 64 * 1024 * 1024 });
}

/** A long-running command: resolves with the JSON line it prints once it listens. */
async function start(...args: string[]): Promise<Record<string, string>> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: work,
    // The editor's key lives in the proxy's process only.
    env: args[0] === 'editor-proxy' ? { ...env, OPENAI_API_KEY: API_KEY } : env,
    stdio: ['ignore', 'pipe', args[0] === 'editor-proxy' ? 'ignore' : 'inherit'],
  });
  background.push(child);
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
  return JSON.parse(line);
}

/** One edit (a scaled row of layer 1's MLP down projection), then the final reply that submits it. */
const editorTurns = (): FakeReply[] => [
  {
    calls: [
      {
        name: 'write_weights',
        arguments: { op: 'scale', tensor: 'model.layers.1.mlp.down_proj.weight', slice: [0], factor: 0.5 },
      },
    ],
    usage: { input: 900, cached: 0, output: 40, reasoning: 0 },
  },
  { text: 'One row scaled.', usage: { input: 1000, cached: 512, output: 8, reasoning: 0 } },
];

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-seed-'));
  addSnapshot(path.join(work, 'hf-home', 'hub'), M, PINNED_REVISIONS[M]!, TOY_TARGET_DIR, ['main']);
  api = await FakeEditorApi.start();
  api.script([...editorTurns(), ...editorTurns()]);
  const {
    IWIBENCH_SERVICE_URL: _url,
    HF_HUB_CACHE: _cache,
    OPENAI_API_KEY: _key,
    OPENAI_BASE_URL: _base,
    ...rest
  } = process.env;
  env = {
    ...rest,
    HF_HOME: path.join(work, 'hf-home'),
    IWIBENCH_ADMIN_TOKEN: 'a'.repeat(48),
    IWIBENCH_EDITOR_TOKEN: 'e'.repeat(48),
  };
});

afterAll(async () => {
  for (const child of background) child.kill('SIGTERM');
  await api?.close();
});

describe("the seed's command lines", () => {
  it('run as written, end to end', { timeout: 300_000 }, async () => {
    // calibrate --model M --cache-dir DIR --seeds N --eligible-per-family K --output F (smoke: one family, 8 seeds)
    const calibrated = await iwibenchWithLog(
      'calibrate',
      '--model',
      M,
      '--cache-dir',
      path.join(work, 'hf-home', 'hub'),
      '--seeds',
      '8',
      '--eligible-per-family',
      '1',
      '--families',
      FAMILY,
      '--output',
      'runs/calibration.json',
    );
    // As a person reads it: the file it wrote, then the headline.
    expect(calibrated.stdout).toBe(
      'calibrate:\n  wrote runs/calibration.json (every examined seed with its measurements and reasons)\n  1 eligible episode selected\n',
    );
    // Its in-process evaluator's progress, as lines (stderr is no terminal here).
    const progress = calibrated.stderr.split('\n').filter((l) => l.startsWith('calibrate: '));
    expect(progress[0]).toBe('calibrate: loading the checkpoint');
    expect(progress).toContainEqual(expect.stringMatching(/^calibrate: pristine (\d+)\/\1 items, [\d.]+ tokens\/s/));

    // service --model M --output-dir D (the cache from $HF_HOME, the pinned revision), and a service env file
    const service = await start(
      'service',
      '--model',
      M,
      '--output-dir',
      'runs/service',
      '--port',
      '0',
      '--log-level',
      'warn',
    );
    expect(service).toMatchObject({ model: M, revision: PINNED_REVISIONS[M] });
    writeFileSync(
      path.join(work, 'runs', 'service.env'),
      `IWIBENCH_SERVICE_URL=${service.url}\nIWIBENCH_ADMIN_TOKEN=${env.IWIBENCH_ADMIN_TOKEN}\nIWIBENCH_EDITOR_TOKEN=${env.IWIBENCH_EDITOR_TOKEN}\n`,
    );

    // editor-proxy --port P --buffer-chat --upstream-url https://…/v1/chat/completions (OPENAI_API_KEY in its env)
    const proxy = await start(
      'editor-proxy',
      '--port',
      '0',
      '--buffer-chat',
      '--upstream-url',
      `${api.url}/chat/completions`,
    );
    expect(proxy.upstreamUrl).toBe(api.url);
    env = { ...env, OPENAI_BASE_URL: `${proxy.url}/v1` }; // the runners' default, 127.0.0.1:8770, on a free port
    const editorFlags = ['--editor-model', EDITOR, '--items-per-kind', '1'];

    // run-pilot CALIBRATION --service-env F --output-dir D --workers 2 --editor-model M (no checkpoint flags)
    const piloted = await iwibenchWithLog(
      'run-pilot',
      'runs/calibration.json',
      '--service-env',
      'runs/service.env',
      '--output-dir',
      'runs/pilot',
      '--workers',
      '2',
      ...editorFlags,
    );
    const [attempt] = readdirSync(path.join(work, 'runs', 'pilot', 'attempts'));
    const { reward } = JSON.parse(readFileSync(path.join(work, 'runs', 'pilot', 'pilot.json'), 'utf8')).attempts[0];
    expect(piloted.stdout).toContain('  wrote runs/pilot/pilot.json (');
    expect(piloted.stdout).toContain(`  1 attempt, 0 failed, mean reward ${reward.toFixed(3)}\n`);
    // The evaluations' progress, one line per worker's attempt, named by it.
    for (const phase of ['pristine', 'patched'])
      expect(piloted.stderr).toMatch(new RegExp(`^pilot ${attempt}: ${phase} (\\d+)/\\1 items, `, 'm'));
    // The same command again resumes, and says what it kept.
    const again = await iwibenchWithLog(
      'run-pilot',
      'runs/calibration.json',
      '--service-env',
      'runs/service.env',
      '--output-dir',
      'runs/pilot',
      '--workers',
      '2',
      ...editorFlags,
    );
    expect(again.stderr).toContain('pilot resumed: 1 of 1 attempts kept');
    expect(again.stdout).toBe(piloted.stdout);
    // The editor came through the proxy, and got no reasoning_effort (not the default editor).
    expect(api.requests[0]!.body).toMatchObject({ model: EDITOR, temperature: 0 });
    expect(api.requests[0]!.body).not.toHaveProperty('reasoning_effort');

    // run-prime --family F --seed S --model M (the service through IWIBENCH_SERVICE_URL, output under runs/)
    env = { ...env, IWIBENCH_SERVICE_URL: service.url };
    const seed = String(JSON.parse(readFileSync(path.join(work, 'runs', 'calibration.json'), 'utf8')).episodes[0].seed);
    const prime = JSON.parse(
      await iwibench('run-prime', '--family', FAMILY, '--seed', seed, '--model', M, ...editorFlags, '--json'),
    );
    expect(prime.results).toBe(path.join('runs', 'prime', `${FAMILY}-s${seed}`, 'results.json'));

    // report RUNS --editor LABEL --output-dir D
    const report = await iwibench('report', 'runs/pilot', '--editor', EDITOR, '--output-dir', 'runs/report');
    expect(report).toContain('  wrote runs/report/report.html (the scoreboard, with one page per attempt)\n');
    expect(report).toContain('  1 attempt, 0 replays\n');
    expect(existsSync(path.join(work, 'runs', 'report', 'report.html'))).toBe(true);

    // report-token-efficiency --editor LABEL RESULTS_CSV ATTEMPTS_DIR … --output F (repeated per editor)
    const tokens = JSON.parse(
      await iwibench(
        'report-token-efficiency',
        '--editor',
        EDITOR,
        'runs/report/results.csv',
        'runs/pilot/attempts',
        '--output',
        'runs/tokens.csv',
        '--json',
      ),
    );
    expect(tokens.overall[0]).toMatchObject({ editor: EDITOR, editor_tokens: 900 + 40 + 1000 + 8 });
    expect(existsSync(path.join(work, 'runs', 'tokens.csv'))).toBe(true);

    // replay-patch RESULTS --control-seed N --output-dir D (the checkpoint RESULTS names, from the cache)
    const replayed = await iwibench(
      'replay-patch',
      `runs/pilot/attempts/${attempt}/results.json`,
      '--control-seed',
      '1001',
      '--output-dir',
      'runs/replay',
      '--items-per-kind',
      '1',
    );
    const replay = JSON.parse(readFileSync(path.join(work, 'runs', 'replay', 'replay.json'), 'utf8'));
    expect(replay).toMatchObject({ family: FAMILY, control_seed: 1001 });
    expect(replay.new_controls.items).toBeGreaterThan(0);
    // A few lines, not the document: the files, the score and the two sets of controls, as replay.json has them.
    const kept = (c: { retention: number | null; retained: number; base_correct: number }) =>
      `retention ${c.retention === null ? 'n/a' : c.retention.toFixed(3)} (${c.retained} of ${c.base_correct} base-correct kept)`;
    expect(replayed.split('\n')).toEqual([
      'replay-patch:',
      '  wrote runs/replay/replay.json (the replay: score, new and repeated controls)',
      "  wrote runs/replay/results.json (every item's outputs and verdicts)",
      expect.stringMatching(
        new RegExp(
          `^  reward ${replay.score.reward.toFixed(3)}, gain ${replay.score.gain.toFixed(3)}, retention .*; recorded reward ${replay.original_reward.toFixed(3)}$`,
        ),
      ),
      `  new controls: ${kept(replay.new_controls)}`,
      `  repeated controls: ${kept(replay.repeated_controls)}`,
      // Replayed on the machine and arithmetic that scored it: the repeated controls' outputs are the same bits.
      `  arithmetic: recorded bf16/3, this run bf16/3; the same arithmetic: the repeated controls reproduced ${replay.arithmetic.repeated_outputs_reproduced} recorded outputs bit for bit`,
      '',
    ]);
    const [reproduced, repeatedCount] = (replay.arithmetic.repeated_outputs_reproduced as string)
      .split('/')
      .map(Number);
    expect(repeatedCount).toBeGreaterThan(0);
    expect(reproduced).toBe(repeatedCount);

    // make-tiny-checkpoint --out D --preset P --seed N
    expect(await iwibench('make-tiny-checkpoint', '--out', 'runs/tiny', '--preset', 'tiny', '--seed', '3')).toMatch(
      /^make-tiny-checkpoint:\n {2}wrote runs\/tiny \(a random tiny checkpoint, seed 3\)\n {2}[\d.]+ s\n$/,
    );
  });
});
