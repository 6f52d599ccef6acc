// The whole pipeline on the tiny checkpoint, through the real CLIs and a real service process: calibrate, run-prime
// (scripted editor), run-pilot with two workers (a fake OpenAI-compatible editor, Chat Completions and Responses),
// resume after SIGKILL, report, token efficiency and replay. Evaluations use the first 2 items of each kind. The
// commands run in one command host (test/cli-host.ts: their modules and the tokenizer built once), but for the
// run-pilot killed and resumed, which runs as its own process; every evaluation runs in a fresh process, as always.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServiceProcess, type ServiceHandle } from '../../scripts/service-process.ts';
import { THRESHOLDS } from '../../taskset/index.ts';
import { startCliHost, type CliHost } from '../cli-host.ts';
import { REPO_ROOT, fixtureCheckpoint } from '../fixtures.ts';
import { FAKE_KEY, USAGE, startFakeEditor } from './fake-editor.ts';

const exec = promisify(execFile);
const CLI = path.join(REPO_ROOT, 'bin/iwibench.js');
const MODEL = fixtureCheckpoint('tiny');
const QUICK = ['--items-per-kind', '2'];
// Each attempt starts fresh evaluation processes: generous limits for a loaded 2-core machine.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 300_000 });

let work: string;
let service: ServiceHandle;
let serviceEnv: string;
let fake: Awaited<ReturnType<typeof startFakeEditor>>;
let host: CliHost;
/** A command line in the file's command host (test/cli-host.ts); rejects with its code and stderr if it fails. */
const cli = (args: string[]) => host.ok(args);

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-pipeline-'));
  service = await startServiceProcess({ modelDir: MODEL, outputDir: path.join(work, 'service') });
  serviceEnv = path.join(work, 'service.env');
  writeFileSync(
    serviceEnv,
    `IWIBENCH_SERVICE_URL=${service.url}\nIWIBENCH_ADMIN_TOKEN=${service.adminToken}\nIWIBENCH_EDITOR_TOKEN=${service.editorToken}\n`,
  );
  fake = await startFakeEditor();
  // The commands but the killed run-pilot, in one process: the editor's key is the fake's.
  host = await startCliHost(work, { ...process.env, OPENAI_API_KEY: FAKE_KEY });
});
afterAll(async () => {
  host?.stop();
  await service?.stop();
  await fake?.close();
});

function calibrationFile(name: string, episodes: [string, number][]): string {
  const file = path.join(work, name);
  writeFileSync(
    file,
    JSON.stringify({
      format: 'iwibench-calibration/1',
      episodes: episodes.map(([family, seed]) => ({ family, seed, params_key: `${family}/${seed}` })),
    }),
  );
  return file;
}

describe('the pipeline on a tiny random target', () => {
  it('calibrate reports honestly that a random target has nothing eligible, and says why', async () => {
    const output = path.join(work, 'calibration.json');
    const failure = await cli([
      'calibrate',
      '--model-dir',
      MODEL,
      '--families',
      'answer_length_control',
      '--seeds',
      '1',
      '--eligible-per-family',
      '1',
      '--output',
      output,
    ]).catch((e) => e);
    expect(failure.code).toBe(1);
    expect(failure.stderr).toMatch(/too few eligible parameter sets: answer_length_control \(0\/1 within 1 seeds\)/);
    const calibration = JSON.parse(readFileSync(output, 'utf8'));
    expect(calibration.short).toEqual(['answer_length_control']);
    const examined = calibration.families.answer_length_control.examined;
    expect(examined).toHaveLength(1);
    expect(examined[0].eligible).toBe(false);
    expect(examined[0].reasons.length).toBeGreaterThan(0);
    expect(calibration.thresholds).toEqual(THRESHOLDS);
  });

  it('run-prime with a scripted editor: edits, submits, is scored in fresh processes, and says so in a summary', async () => {
    const script = path.join(work, 'script.json');
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          { tool: 'read_weights', arguments: { op: 'summary', tensor: 'model.layers.1.mlp.down_proj.weight' } },
          {
            tool: 'write_weights',
            arguments: { op: 'scale', tensor: 'model.layers.1.mlp.down_proj.weight', slice: [[0, 16]], factor: -2 },
          },
        ],
        final: 'done',
      }),
    );
    const out = path.join(work, 'prime');
    const { stdout } = await cli([
      'run-prime',
      '--family',
      'local_factual_update',
      '--seed',
      '0',
      '--model-dir',
      MODEL,
      '--service-env',
      serviceEnv,
      '--output-dir',
      out,
      '--editor-model',
      `script:${script}`,
      ...QUICK,
    ]);
    const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
    // The summary: where the results went, the headline figures as results.json has them, why the editor stopped.
    const { score } = results;
    expect(stdout).toBe(
      [
        'run-prime:',
        `  wrote ${path.join(out, 'results.json')} (the score and every item's outputs and verdicts)`,
        `  wrote ${out} (the trace and the patch beside it)`,
        `  reward ${score.reward.toFixed(3)}, gain ${score.gain.toFixed(3)}, retention ${score.retention.overall.toFixed(3)} (${score.retention.counts.all.retained} of ${score.retention.counts.all.baseCorrect} base-correct items kept)`,
        '  the editor stopped: final_reply',
        '',
      ].join('\n'),
    );
    expect(results.format).toBe('iwibench-results/1');
    // Scored as the original scores: bf16 arithmetic by default, on the CPU.
    expect(results.evaluation).toMatchObject({ device: 'cpu', precision: 'bf16' });
    expect(results.items).toHaveLength(8); // 2 of each kind
    expect(results.patch.ops).toBe(1);
    expect(results.patch.changed_parameters).toBeGreaterThan(0);
    expect(results.resources).toMatchObject({ turns: 3, tool_calls: 2 });
    // The headline agrees with the verdicts recorded per item: target success from the targets, reward = gain × retention.
    const targets = results.items.filter((i: { kind: string }) => i.kind === 'target');
    const passed = (side: 'base' | 'edited') =>
      targets.filter((i: Record<typeof side, { passed: boolean }>) => i[side].passed).length / targets.length;
    expect(score.targetSuccess).toEqual({ base: passed('base'), edited: passed('edited'), count: 2 });
    expect(score.reward).toBe(score.gain * score.retention.overall);
    expect(results.versions.model_id).toBe('iwibench/tiny');
    for (const item of results.items) expect(typeof item.edited.output).toBe('string');
    expect(
      existsSync(path.join(out, 'outputs-pristine.json')) && existsSync(path.join(out, 'outputs-edited.json')),
    ).toBe(true);
  });

  it('run-pilot with two workers and an OpenAI-compatible editor (Chat Completions and Responses), then report and token efficiency', async () => {
    const out = path.join(work, 'pilot');
    const runs = [
      [
        'fake-chat',
        'chat',
        calibrationFile('pilot.json', [
          ['answer_length_control', 0],
          ['lexical_inhibition', 0],
        ]),
      ],
      ['fake-responses', 'responses', calibrationFile('pilot-one.json', [['answer_length_control', 0]])],
    ] as const;
    for (const [label, api, calibration] of runs) {
      const { stdout } = await cli([
        'run-pilot',
        calibration,
        '--service-env',
        serviceEnv,
        '--model-dir',
        MODEL,
        '--output-dir',
        out,
        '--workers',
        '2',
        '--editor-model',
        'fake-editor',
        '--editor-base-url',
        fake.url,
        '--api',
        api,
        '--editor-label',
        label,
        ...QUICK,
        '--json',
      ]);
      expect(JSON.parse(stdout)).toMatchObject({ attempts: api === 'chat' ? 2 : 1, failed: 0 });
    }
    // The second editor's attempt at the same episode reused the pristine outputs of the first.
    const pristine = (label: string) =>
      readFileSync(path.join(out, 'attempts', `answer_length_control-s0-${label}-a0`, 'outputs-pristine.json'));
    expect(pristine('fake-responses').equals(pristine('fake-chat'))).toBe(true);
    // Responses: the reasoning item of the first reply is carried into the second request.
    const second = fake.requests
      .filter((r) => r.path === '/v1/responses')
      .find((r) => r.body.input.some((i: { type?: string }) => i.type === 'function_call_output'));
    expect(
      second!.body.input.some(
        (i: { type?: string; encrypted_content?: string }) =>
          i.type === 'reasoning' && i.encrypted_content?.startsWith('enc-'),
      ),
    ).toBe(true);
    const attempts = readdirSync(path.join(work, 'pilot', 'attempts')).sort();
    expect(attempts).toHaveLength(3);
    const one = JSON.parse(readFileSync(path.join(work, 'pilot', 'attempts', attempts[0]!, 'results.json'), 'utf8'));
    expect(one.resources.editor).toEqual({
      requests: 2,
      failed_requests: 0,
      input_tokens: 2 * USAGE.input,
      cached_input_tokens: 2 * USAGE.cached,
      output_tokens: 2 * USAGE.output,
      reasoning_tokens: 2 * USAGE.reasoning,
    });
    expect(one.patch.ops).toBe(1);

    const report = JSON.parse(
      (await cli(['report', path.join(work, 'pilot'), '--output-dir', path.join(work, 'report'), '--json'])).stdout,
    );
    const csv = readFileSync(report.results_csv, 'utf8').trim().split('\n');
    expect(csv).toHaveLength(1 + 3);
    expect(existsSync(report.html)).toBe(true);
    const efficiency = path.join(work, 'tokens.csv');
    const { stdout } = await cli([
      'report-token-efficiency',
      '--editor',
      'fake-chat',
      report.results_csv,
      path.join(work, 'pilot', 'attempts'),
      '--output',
      efficiency,
    ]);
    expect(readFileSync(efficiency, 'utf8')).toMatch(/fake-chat/);
    // The summary names the CSV and its sidecar, and the editor's figure as the sidecar has it.
    const sidecar = JSON.parse(readFileSync(path.join(work, 'tokens.json'), 'utf8'));
    expect(sidecar).toMatchObject({ editor: 'fake-chat', attempts: 2 });
    expect(stdout).toContain(`  wrote ${efficiency} (`);
    expect(stdout).toContain(`  wrote ${path.join(work, 'tokens.json')} (`);
    const perToken = sidecar.overall[0].reward_per_1k_editor_tokens.toFixed(3);
    expect(stdout).toContain(`  fake-chat: 2 attempts, reward per 1,000 editor tokens ${perToken} on iwibench/tiny\n`);
  });

  it('resumes a pilot killed mid-run: completed attempts untouched, the rest finished, none duplicated or lost', async () => {
    const calibration = calibrationFile('resume.json', [
      ['answer_length_control', 1],
      ['terminology_preference', 1],
    ]);
    const out = path.join(work, 'resume');
    const args = [
      CLI,
      'run-pilot',
      calibration,
      '--service-env',
      serviceEnv,
      '--model-dir',
      MODEL,
      '--output-dir',
      out,
      '--workers',
      '1',
      '--editor-model',
      'builtin:noop',
      ...QUICK,
      '--json',
    ];
    const child = spawn(process.execPath, args, { stdio: 'ignore' });
    const first = path.join(out, 'attempts', 'answer_length_control-s1-builtin_noop-a0', 'attempt.json');
    while (!existsSync(first)) await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const kept = statSync(path.join(path.dirname(first), 'results.json')).mtimeMs;
    const keptBytes = readFileSync(path.join(path.dirname(first), 'results.json'));
    const { stdout } = await exec(process.execPath, args);
    expect(JSON.parse(stdout)).toMatchObject({ attempts: 2, failed: 0 });
    expect(statSync(path.join(path.dirname(first), 'results.json')).mtimeMs).toBe(kept);
    expect(readFileSync(path.join(path.dirname(first), 'results.json')).equals(keptBytes)).toBe(true);
    const pilot = JSON.parse(readFileSync(path.join(out, 'pilot.json'), 'utf8'));
    expect(pilot.attempts.map((a: { id: string; status: string }) => [a.id, a.status])).toEqual([
      ['answer_length_control-s1-builtin_noop-a0', 'complete'],
      ['terminology_preference-s1-builtin_noop-a0', 'complete'],
    ]);
    expect(readdirSync(path.join(out, 'attempts')).sort()).toHaveLength(2);
    // A no-op editor earns exactly zero.
    for (const a of pilot.attempts) expect(a.reward).toBe(0);
  });

  it('replays a patch with a new control seed: new and repeated controls reported apart', async () => {
    const results = path.join(work, 'prime', 'results.json');
    const out = path.join(work, 'replay');
    const { stdout } = await cli([
      'replay-patch',
      results,
      '--control-seed',
      '99',
      '--model-dir',
      MODEL,
      '--output-dir',
      out,
      ...QUICK,
      '--json',
    ]);
    const replay = JSON.parse(stdout);
    expect(replay.control_seed).toBe(99);
    expect(replay.new_controls.items).toBe(2);
    expect(replay.repeated_controls.items).toBe(2);
    expect(JSON.parse(readFileSync(path.join(out, 'replay.json'), 'utf8'))).toEqual(replay);
    // At the precision the patch was scored at; a results.json of before the setting was scored in float32.
    expect(JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8')).evaluation).toMatchObject({
      precision: 'bf16',
      arithmetic: 'bf16/3',
    });
    expect(replay.arithmetic).toMatchObject({ recorded: 'bf16/3', replay: 'bf16/3' });
    const older = JSON.parse(readFileSync(results, 'utf8'));
    delete older.evaluation.precision;
    const olderFile = path.join(work, 'older-results.json');
    writeFileSync(olderFile, JSON.stringify(older));
    const olderOut = path.join(work, 'replay-older');
    await cli([
      'replay-patch',
      olderFile,
      '--control-seed',
      '99',
      '--model-dir',
      MODEL,
      '--output-dir',
      olderOut,
      ...QUICK,
    ]);
    const replayed = JSON.parse(readFileSync(path.join(olderOut, 'results.json'), 'utf8'));
    expect(replayed.evaluation.precision).toBe('float32');
    expect(replayed.args.precision).toBeUndefined(); // not given: the recorded one
  });
});
