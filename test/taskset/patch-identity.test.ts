// evaluate-patch and replay-patch take the id of the patch they evaluate (from the submission or the results'
// records) and refuse a folder that holds any other, before any evaluation process starts. replay-patch also takes the
// target questions from the results and refuses, before any evaluation, where today's family code would ask others.
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, Tokenizer } from '../../engine/index.ts';
import { writeEpisodePatch } from '../../service/weights/patch.ts';
import { WeightStore } from '../../service/weights/store.ts';
import { RESULTS_FORMAT } from '../../taskset/evaluation.ts';
import { gradedItems } from '../../taskset/episode.ts';
import { Taskset } from '../../taskset/taskset.ts';
import { startCliHost, type CliHost } from '../cli-host.ts';
import { fixtureCheckpoint } from '../fixtures.ts';

const MODEL = fixtureCheckpoint('tiny');
const DOWN = 'model.layers.1.mlp.down_proj.weight';

let work: string;
let first: { dir: string; digest: string };
let second: { dir: string; digest: string };

let host: CliHost;

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-patch-identity-'));
  host = await startCliHost(work);
  const checkpoint = Checkpoint.open(MODEL);
  const store = new WeightStore(checkpoint);
  const a = store.createEpisode('a');
  a.write({ op: 'scale', tensor: DOWN, slice: [[0, 16]], factor: -2 });
  first = writeEpisodePatch(a, path.join(work, 'first'));
  const b = store.createEpisode('b');
  b.write({ op: 'scale', tensor: DOWN, slice: [[0, 16]], factor: 3 });
  second = writeEpisodePatch(b, path.join(work, 'second'));
  checkpoint.close();
});
afterAll(() => {
  host?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** stderr of a command line that must fail, run in the file's command host (test/cli-host.ts). */
async function failure(args: string[]): Promise<string> {
  const result = await host.run(args);
  expect(result.code).toBe(1);
  return result.stderr;
}

/** evaluate-patch of local_factual_update seed 0 on the tiny checkpoint into `out`. */
const evaluatePatch = (out: string) => [
  'evaluate-patch',
  '--model-dir',
  MODEL,
  '--family',
  'local_factual_update',
  '--seed',
  '0',
  '--output-dir',
  out,
];

describe('evaluate-patch and replay-patch verify the patch id', () => {
  it('evaluate-patch refuses a folder holding another patch than --patch-id, and a --patch without one', async () => {
    const swapped = path.join(work, 'swapped');
    cpSync(second.dir, swapped, { recursive: true });
    const out = path.join(work, 'evaluate-out');
    const base = [...evaluatePatch(out), '--patch', swapped];
    const stderr = await failure([...base, '--patch-id', first.digest]);
    expect(stderr).toContain(`holds patch ${second.digest}`);
    expect(stderr).toContain(`not the requested ${first.digest}`);
    expect(existsSync(path.join(out, 'outputs-pristine.json'))).toBe(false); // refused before any evaluation
    expect(await failure(base)).toContain('--patch and --patch-id go together');
    expect(await failure([...base, '--patch-id', 'abc'])).toContain('--patch-id must be a patch id');
  });

  it('evaluate-patch refuses a --max-batch that is not a positive integer, before any evaluation', async () => {
    const out = path.join(work, 'max-batch-out');
    expect(await failure([...evaluatePatch(out), '--max-batch', '0'])).toContain(
      '--max-batch must be a positive integer, got 0',
    );
    expect(existsSync(path.join(out, 'outputs-pristine.json'))).toBe(false);
  });

  /** Results of local_factual_update seed 0 recording `first` in a folder that now holds `second`. */
  async function swappedResults(name: string, alter: (items: any[]) => void = () => {}): Promise<string> {
    const dir = path.join(work, `${name}-patch`);
    cpSync(first.dir, dir, { recursive: true });
    const results = path.join(work, `${name}.json`);
    const episode = { family: 'local_factual_update', seed: 0, control_seed: 0 };
    const taskset = new Taskset({ tokenizer: await Tokenizer.load(MODEL) });
    const items = gradedItems(taskset.task({ family: episode.family, seed: 0 }).spec).map((i) => ({
      id: i.id,
      kind: i.kind,
      messages: i.messages,
      max_new_tokens: i.maxNewTokens,
      check: i.check,
    }));
    alter(items);
    const recorded = {
      format: RESULTS_FORMAT,
      versions: { revision: 'local' },
      episode,
      editor: null,
      resources: null,
      patch: { dir, sha256: first.digest },
      items,
    };
    writeFileSync(results, JSON.stringify(recorded));
    cpSync(second.dir, dir, { recursive: true, force: true }); // swapped after the results were written
    return results;
  }
  const replay = (results: string, out: string, ...more: string[]) =>
    failure(['replay-patch', results, '--control-seed', '5', '--model-dir', MODEL, '--output-dir', out, ...more]);

  it('replay-patch refuses a patch folder that is not the one the results recorded', async () => {
    const out = path.join(work, 'replay-out');
    const stderr = await replay(await swappedResults('results'), out);
    expect(stderr).toContain(`holds patch ${second.digest}`);
    expect(stderr).toContain(`not the requested ${first.digest}`);
    expect(existsSync(path.join(out, 'outputs-pristine.json'))).toBe(false);
  });

  it("replay-patch refuses results whose target questions today's family code would not ask, naming the first; --regenerate takes today's", async () => {
    let altered = '';
    const results = await swappedResults('altered', (items) => {
      const target = items.find((i) => i.kind === 'target');
      target.messages = [{ role: 'user', content: 'A question the family never asked.' }];
      altered = target.id;
    });
    const out = path.join(work, 'replay-altered');
    const stderr = await replay(results, out);
    expect(stderr).toContain('would ask other target questions than the patch was scored on');
    expect(stderr).toContain(
      `item ${altered}: messages was [{"role":"user","content":"A question the family never asked."}], now`,
    );
    expect(stderr).toContain('--regenerate');
    expect(existsSync(out)).toBe(false); // refused before anything ran or was written
    // With --regenerate it goes on to today's questions, and reaches the patch check.
    expect(await replay(results, out, '--regenerate')).toContain(`holds patch ${second.digest}`);
  });
});
