// The evaluation entry (service/evaluate.ts): a fresh node process running its own worker file, not the CLI, that
// hands back the outputs the in-process evaluator gives and the patch's id and stats as loadPatch reads them; a
// failing or killed process is a clear error, and one whose runner is gone ends itself.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EVALUATION_WORKER,
  evaluateInFreshProcess,
  evaluateItems,
  patchSummary,
  evaluationTarget,
  type EvaluationItem,
} from '../../service/evaluate.ts';
import { evaluationProgress, type EvaluationProgress } from '../../service/evaluation-progress.ts';
import { Checkpoint, ENGINE_PROCESS_FLAGS } from '../../engine/index.ts';
import { loadPatch, writeEpisodePatch, type PatchRef } from '../../service/weights/patch.ts';
import { WeightStore } from '../../service/weights/store.ts';
import { REPO_ROOT, fixtureCheckpoint } from '../fixtures.ts';

const MODEL = fixtureCheckpoint('tiny');
const location = { modelDir: MODEL };
const DOWN = 'model.layers.1.mlp.down_proj.weight';
const items: EvaluationItem[] = [
  { id: 'a', messages: [{ role: 'user', content: 'Name a colour.' }], max_new_tokens: 4 },
  { id: 'b', messages: [{ role: 'user', content: 'Hi' }], max_new_tokens: 6 },
];

let work: string;
let patch: PatchRef;
let other: PatchRef;

beforeAll(() => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-evaluate-'));
  const checkpoint = Checkpoint.open(MODEL);
  const store = new WeightStore(checkpoint);
  const episode = store.createEpisode('e');
  episode.write({ op: 'scale', tensor: DOWN, slice: [[0, 16]], factor: -2 });
  episode.write({
    op: 'fill',
    tensor: DOWN,
    slice: [
      [16, 20],
      [0, 8],
    ],
    value: 0.5,
  });
  const written = writeEpisodePatch(episode, path.join(work, 'patch'));
  patch = { dir: written.dir, id: written.digest };
  const second = store.createEpisode('f');
  second.write({ op: 'scale', tensor: DOWN, slice: [[0, 4]], factor: 3 });
  const otherWritten = writeEpisodePatch(second, path.join(work, 'other'));
  other = { dir: otherWritten.dir, id: otherWritten.digest };
  checkpoint.close();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('evaluateInFreshProcess', () => {
  it('runs its own worker file, not the CLI, and returns what the in-process evaluator gives with the patch stats loadPatch reads; its progress reaches the parent', async () => {
    let command: string[] = [];
    const out = path.join(work, 'outputs-edited.json');
    const reports: EvaluationProgress[] = [];
    const listen = (p: EvaluationProgress) => reports.push(p);
    evaluationProgress.on('progress', listen);
    const run = await evaluateInFreshProcess({ location, items, patch }, out, {
      onStart: (child) => (command = child.spawnargs),
    }).finally(() => evaluationProgress.off('progress', listen));
    expect(command).toContain(EVALUATION_WORKER);
    expect(command).toEqual(expect.arrayContaining([...ENGINE_PROCESS_FLAGS]));
    expect(command.join(' ')).not.toMatch(/iwibench\.js|cli\.ts|evaluate-patch/);

    const loaded = loadPatch(patch.dir, patch.id);
    expect(run.weights).toBe('patched');
    expect(run.patch).toEqual({
      dir: patch.dir,
      sha256: loaded.id,
      changed_parameters: loaded.json.stats.changed_parameters,
      tensors: loaded.json.stats.tensors,
      ops: 2,
      sha256_verified: true,
      touched_tensors: [DOWN],
    });
    expect(loaded.json.ops).toHaveLength(2);
    const { stats } = loaded.json;
    expect(patchSummary(patch)).toEqual({
      dir: patch.dir,
      sha256: patch.id,
      changed_parameters: stats.changed_parameters,
      tensors: stats.tensors,
      ops: 2,
    });

    // Progress from the process, in order: loading, then the patched phase from 0 to every item, one report as each
    // item ends, with the tokens it generated.
    expect(reports.map((r) => [r.out, r.phase, r.done, r.total])).toEqual([
      [out, 'loading', 0, 0],
      [out, 'patched', 0, 2],
      [out, 'patched', 1, 2],
      [out, 'patched', 2, 2],
    ]);
    const generated = Object.values(run.outputs).reduce((n, o) => n + o.output_tokens, 0);
    expect(reports.at(-1)!.generatedTokens).toBe(generated);
    expect(reports.at(-1)!.seconds).toBeGreaterThan(0);

    const inProcess = await evaluateItems(location, items, { patch });
    expect(run.outputs).toEqual(inProcess.outputs);
    expect(run.forward_tokens).toBe(inProcess.forward_tokens);
    expect(run.model).toEqual(evaluationTarget(location).model);
  });

  it('gives the same outputs whatever the batch limit: one row, fewer rows than items, or chosen by the probe', async () => {
    const many: EvaluationItem[] = [
      ...items,
      { id: 'c', messages: [{ role: 'user', content: 'Count to three.' }], max_new_tokens: 1 },
      { id: 'd', messages: [{ role: 'user', content: 'What is the capital of France?' }], max_new_tokens: 9 },
      { id: 'e', messages: [{ role: 'user', content: 'Say yes.' }], max_new_tokens: 3 },
      // Nine items: the probe measures up to the first row count that holds them all (16), and no more rows than
      // items are in flight.
      ...['f', 'g', 'h', 'i'].map((id) => ({
        id,
        messages: [{ role: 'user' as const, content: `Spell ${id}.` }],
        max_new_tokens: 2,
      })),
    ];
    // A machine's first evaluation measures the speed curve and keeps it; the next process reads it back.
    const cacheDir = process.env.IWIBENCH_CACHE_DIR;
    process.env.IWIBENCH_CACHE_DIR = path.join(work, 'cache');
    try {
      const chosen = await evaluateItems(location, many);
      expect(Object.keys(chosen.outputs)).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']);
      expect(chosen.outputs.c!.output_tokens).toBeLessThanOrEqual(1);
      expect(chosen.speed_curve!.cached).toBe(false);
      expect(chosen.speed_curve!.points.map((point) => point.rows)).toEqual([8, 16]);
      expect(chosen.batch_limit).toBe(Math.min(9, fastestRows(chosen.speed_curve!.points)));
      expect(readdirSync(path.join(work, 'cache', 'speed'))).toHaveLength(1);
      for (const maxBatch of [1, 2]) {
        const run = await evaluateItems(location, many, { batch: { maxBatch } });
        expect(run.outputs).toEqual(chosen.outputs);
        expect(run.forward_tokens).toBe(chosen.forward_tokens);
        expect(run.speed_curve).toBeNull();
      }
      const kept = await evaluateInFreshProcess(
        { location, items: many, patch: null, batch: { memoryBytes: 2 ** 40 } },
        path.join(work, 'outputs-kept.json'),
      );
      expect(kept.speed_curve).toEqual({ points: chosen.speed_curve!.points, cached: true });
      expect(kept.outputs).toEqual(chosen.outputs);
      const fresh = await evaluateInFreshProcess(
        { location, items: many, patch: null, batch: { maxBatch: 3 } },
        path.join(work, 'outputs-batch.json'),
      );
      expect(fresh.outputs).toEqual(chosen.outputs);
    } finally {
      if (cacheDir === undefined) delete process.env.IWIBENCH_CACHE_DIR;
      else process.env.IWIBENCH_CACHE_DIR = cacheDir;
    }
  });

  it('runs the pristine weights when the job names no patch', async () => {
    const run = await evaluateInFreshProcess(
      { location, items, patch: null },
      path.join(work, 'outputs-pristine.json'),
    );
    expect(run.weights).toBe('pristine');
    expect(run.patch).toBeNull();
    expect(run.outputs).toEqual((await evaluateItems(location, items)).outputs);
  });

  it('runs the job on its device: a patched run on --device ort-cpu is what the in-process evaluator gives there', async () => {
    const short = [{ ...items[0]!, max_new_tokens: 2 }]; // the device path on the CPU provider is slow
    const run = await evaluateInFreshProcess(
      { location, items: short, patch, device: 'ort-cpu' },
      path.join(work, 'outputs-device.json'),
    );
    expect(run.device).toBe('ort-cpu');
    expect(run.outputs).toEqual((await evaluateItems(location, short, { patch, device: 'ort-cpu' })).outputs);
  });

  it("rejects with the child's exit code and last stderr line when it fails, and with the signal when it is killed", async () => {
    const swapped = { dir: other.dir, id: patch.id }; // the folder holds another patch than the id asked for
    await expect(
      evaluateInFreshProcess({ location, items, patch: swapped }, path.join(work, 'swapped.json')),
    ).rejects.toThrow(
      new RegExp(
        `^evaluation process \\(patched\\) failed with exit code 1: .*holds patch ${other.id}.*not the requested ${patch.id}`,
      ),
    );
    const killed = evaluateInFreshProcess({ location, items, patch: null }, path.join(work, 'killed.json'), {
      onStart: (child) => child.kill('SIGKILL'),
    });
    await expect(killed).rejects.toThrow(/^evaluation process \(pristine\) failed with SIGKILL/);
  });

  it('ends itself when the runner that started it is killed, without writing its outputs', async () => {
    const out = path.join(work, 'orphan.json');
    const runner = spawn(
      process.execPath,
      ['--import', 'tsx/esm', path.join(REPO_ROOT, 'test/service/evaluate-runner-child.ts'), MODEL, out],
      {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const pid = Number(
      await new Promise<string>((resolve) => createInterface({ input: runner.stdout! }).once('line', resolve)),
    );
    expect(isAlive(pid)).toBe(true);
    runner.kill('SIGKILL');
    while (isAlive(pid)) await sleep(100); // had it gone on, it would have written its outputs
    expect(existsSync(`${out}.tokens.json`) || existsSync(out)).toBe(false);
  });

  it('loads no package it does not use: a process per evaluation starts in ~0.5 s of modules, not ~0.9', async () => {
    // The evaluation process's own file, in a process that records every module it loads (test/record-loads.mjs):
    // without arguments it stops at its usage error, once its imports have loaded.
    const record = path.join(work, 'loads.txt');
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', path.join(REPO_ROOT, 'test/record-loads.mjs'), EVALUATION_WORKER],
      { cwd: REPO_ROOT, env: { ...process.env, IWIBENCH_RECORD_LOADS: record }, stdio: 'ignore' },
    );
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(1);
    const loaded = readFileSync(record, 'utf8').split('\n');
    expect(loaded).toContain(pathToFileURL(EVALUATION_WORKER).href);
    const packages = new Set(loaded.map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1]));
    // TypeBox (the service's schemas: 373 modules, ~0.5 s under tsx), the tokenizer's library (the runner
    // tokenizes), the editor's client, the queue's, the language detector.
    for (const unused of ['typebox', '@huggingface/transformers', 'openai', 'bullmq', 'eld'])
      expect(packages.has(unused), unused).toBe(false);
    expect(packages.has('onnxruntime-node')).toBe(true); // the recording sees packages
  });

  it('refuses a folder holding another patch in this process too (patchSummary)', () => {
    expect(() => patchSummary({ dir: other.dir, id: patch.id })).toThrow(`holds patch ${other.id}`);
  });
});

/** Running: not ended, and not a zombie waiting for a parent that may never reap it. */
function isAlive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The row count of a speed curve's fastest point (the fewer rows of equally fast ones). */
function fastestRows(points: { rows: number; tokensPerSecond: number }[]): number {
  const fastest = Math.max(...points.map((point) => point.tokensPerSecond));
  return Math.min(...points.filter((point) => point.tokensPerSecond === fastest).map((point) => point.rows));
}
