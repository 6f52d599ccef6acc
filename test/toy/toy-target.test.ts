// The committed toy target (toy/target): reproducible from its seed, the same network in TensorFlow.js (training)
// and in our engine (serving), the same logits as Hugging Face transformers, and the answers of its corpus.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Checkpoint, Gemma3Engine, gemma3TokenizerDir, Tokenizer } from '../../engine/index.ts';
import type { ChatMessage } from '../../core/chat.ts';
import { buildCorpus, corpusSeeds, PARAMETER_SETS_PER_FAMILY } from '../../toy/corpus.ts';
import { createWeights, disposeWeights, logitsAt } from '../../toy/model.ts';
import { TOY_TARGET_DIR, lossCsv, makeToyTarget, type ToyTargetRecord } from '../../toy/target.ts';
import { epochBatches, useWasmBackend } from '../../toy/train.ts';
import { Rng } from '../../core/random.ts';
import { FAMILY_IDS } from '../../taskset/types.ts';
import { REPO_ROOT } from '../fixtures.ts';

const record = JSON.parse(readFileSync(path.join(TOY_TARGET_DIR, 'training.json'), 'utf8')) as ToyTargetRecord;
const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
/** The loss curve without its wall-clock column. */
const curve = (csv: string) =>
  csv
    .trim()
    .split('\n')
    .map((line) => line.split(',').slice(0, -1).join(','));

describe('toy corpus', () => {
  it('takes the first distinct parameter sets of every family, and each chat once', async () => {
    for (const family of FAMILY_IDS) expect(corpusSeeds(family)).toHaveLength(PARAMETER_SETS_PER_FAMILY);
    const corpus = buildCorpus(await Tokenizer.load(gemma3TokenizerDir()));
    const keys = corpus.examples.map((e) => JSON.stringify(e.messages));
    expect(new Set(keys).size).toBe(keys.length);
    expect(corpus.seeds).toEqual(record.corpus.seeds);
    expect(createHash('sha256').update(JSON.stringify(corpus.examples)).digest('hex')).toBe(record.corpus.sha256);
  });

  it('batches every sequence exactly once per epoch, within the token budget', () => {
    const sequences = Array.from({ length: 300 }, (_, i) => ({ ids: new Array(5 + (i % 37)).fill(7), answerStart: 3 }));
    const batches = epochBatches(sequences, 200, new Rng('test'));
    expect(batches.flat().sort((a, b) => a - b)).toEqual([...sequences.keys()]);
    for (const batch of batches)
      expect(batch.length * Math.max(...batch.map((i) => sequences[i]!.ids.length))).toBeLessThanOrEqual(200);
    expect(() => epochBatches([{ ids: new Array(300).fill(1), answerStart: 1 }], 200, new Rng('test'))).toThrow(
      /exceeds the batch budget/,
    );
  });
});

describe('make-toy-target', () => {
  let out: string;
  beforeAll(() => {
    out = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-toy-')), 'toy');
  });
  afterAll(() => rmSync(path.dirname(out), { recursive: true, force: true }));

  it('reproduces the committed toy: the same tokenizer and, bit for bit, the first training steps', async () => {
    const steps = 3;
    const made = await makeToyTarget({ out, seed: record.args.seed, maxSteps: steps });
    expect(made.args.max_steps).toBe(steps);
    for (const file of ['tokenizer.json', 'tokenizer_config.json', 'config.json', 'generation_config.json']) {
      expect(readFileSync(path.join(out, file), 'utf8'), file).toBe(
        readFileSync(path.join(TOY_TARGET_DIR, file), 'utf8'),
      );
    }
    const committed = curve(readFileSync(path.join(TOY_TARGET_DIR, 'loss.csv'), 'utf8'));
    const rerun = curve(readFileSync(path.join(out, 'loss.csv'), 'utf8'));
    expect(rerun).toHaveLength(steps + 1);
    expect(rerun).toEqual(committed.slice(0, steps + 1));
    expect(made.corpus.sha256).toBe(record.corpus.sha256);
  });

  it('refuses a bad seed, or an output that is not a checkpoint folder, before writing anything', async () => {
    const bad = path.join(path.dirname(out), 'bad');
    await expect(makeToyTarget({ out: bad, seed: -1 })).rejects.toThrow(/seed must be a non-negative integer/);
    expect(existsSync(bad)).toBe(false);
    const file = path.join(path.dirname(out), 'notes.txt');
    writeFileSync(file, 'keep me');
    await expect(makeToyTarget({ out: file, seed: 0 })).rejects.toThrow(/is a file, not a folder/);
    mkdirSync(bad);
    writeFileSync(path.join(bad, 'notes.txt'), 'keep me');
    await expect(makeToyTarget({ out: bad, seed: 0 })).rejects.toThrow(/not a checkpoint/);
    expect(readFileSync(file, 'utf8') + readFileSync(path.join(bad, 'notes.txt'), 'utf8')).toBe('keep mekeep me');
  });

  it('records the whole run beside the checkpoint', () => {
    expect(record.result.steps).toBe(curve(readFileSync(path.join(TOY_TARGET_DIR, 'loss.csv'), 'utf8')).length - 1);
    expect(record.args.max_steps).toBeNull();
    expect(
      lossCsv([{ step: 0, epoch: 0, loss: 1.5, tokenAccuracy: 0.25, learningRate: 1e-4, tokens: 10, seconds: 1.234 }]),
    ).toBe('step,epoch,loss,token_accuracy,learning_rate,tokens,seconds\n0,0,1.5,0.25,0.0001,10,1.2\n');
  });
});

describe('the toy target in our engine', () => {
  let checkpoint: Checkpoint;
  let engine: Gemma3Engine;
  let tokenizer: Tokenizer;
  beforeAll(async () => {
    checkpoint = Checkpoint.open(TOY_TARGET_DIR);
    // The exact path: its logits are held to the training code's and Hugging Face's float32 ones.
    engine = await Gemma3Engine.create({ checkpoint, precision: 'float32' });
    tokenizer = await Tokenizer.load(TOY_TARGET_DIR);
  });
  afterAll(async () => {
    await engine.close();
    checkpoint.close();
  });

  it('computes the logits the training code computes (TensorFlow.js, float32)', async () => {
    await useWasmBackend();
    const ids = tokenizer.chatIds([{ role: 'user', content: 'Who is the current prime minister of Belgium?' }]);
    const ours = await engine.logits(ids);
    const weights = createWeights(checkpoint.config, (name) => checkpoint.readF32(name));
    const rows = Int32Array.from(ids.keys());
    const trained = logitsAt(
      checkpoint.config,
      weights,
      { ids: Int32Array.from(ids), B: 1, T: ids.length },
      rows,
    ).dataSync();
    disposeWeights(weights);
    const scale = Math.max(...ours.map(Math.abs));
    const worst = Math.max(...ours.map((x, i) => Math.abs(x - trained[i]!)));
    expect(worst).toBeLessThan(1e-4 * scale);
  });

  it('matches Hugging Face transformers: tokenizer ids, logits within 1e-4 of the largest, greedy answers', async () => {
    type Case = {
      messages: ChatMessage[];
      ids: number[];
      logits: number[][];
      argmax: number[];
      logsumexp: number[];
      max_abs_logit: number;
      greedy_ids: number[];
    };
    const golden = JSON.parse(readFileSync(path.join(REPO_ROOT, 'test/golden/toy-target.json'), 'utf8')) as {
      checkpoint_sha256: string;
      vocab_ids: number[];
      cases: Case[];
    };
    expect(
      sha256(path.join(TOY_TARGET_DIR, 'model.safetensors')),
      'toy retrained: regenerate test/golden/toy-target.json (make_toy_golden.py)',
    ).toBe(golden.checkpoint_sha256);
    const V = checkpoint.config.vocab_size;
    for (const c of golden.cases) {
      expect(tokenizer.chatIds(c.messages)).toEqual(c.ids);
      const logits = await engine.logits(c.ids);
      c.ids.forEach((_, t) => {
        const row = logits.subarray(t * V, (t + 1) * V);
        golden.vocab_ids.forEach((id, k) =>
          expect(Math.abs(row[id]! - c.logits[t]![k]!)).toBeLessThan(1e-4 * c.max_abs_logit),
        );
        const max = Math.max(...row);
        expect(row.indexOf(max)).toBe(c.argmax[t]);
        const lse = max + Math.log(row.reduce((s, x) => s + Math.exp(x - max), 0));
        expect(Math.abs(lse - c.logsumexp[t]!)).toBeLessThan(1e-4 * c.max_abs_logit);
      });
      const [generated] = await engine.generate([c.ids], { maxNewTokens: 40 });
      expect(generated!.outputIds).toEqual(c.greedy_ids);
    }
  });

  it('answers its corpus as a capable unedited model would', async () => {
    const corpus = buildCorpus(await Tokenizer.load(gemma3TokenizerDir()));
    const sample = new Rng('toy-target-test').sample(corpus.examples, 48);
    let exact = 0;
    for (let i = 0; i < sample.length; i += 8) {
      const batch = sample.slice(i, i + 8);
      const results = await engine.generate(
        batch.map((e) => tokenizer.chatIds(e.messages)),
        { maxNewTokens: 128 },
      );
      results.forEach((r, k) => (exact += tokenizer.decode(r.outputIds).trim() === batch[k]!.answer ? 1 : 0));
    }
    expect(exact / sample.length).toBeGreaterThanOrEqual(0.9);
  });
});
