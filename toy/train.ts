// Training of the toy target: next-token cross-entropy on the answer tokens (and the closing <end_of_turn>) of
// chat-formatted sequences, Adam with linear warm-up and cosine decay, length-bucketed batches. Everything random
// (initial weights, batch order) comes from the seed, and TensorFlow.js's WebAssembly backend runs one thread, so a
// run is reproducible bit for bit.
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-wasm';
import '@tensorflow/tfjs'; // registers the gradients, which tfjs-core's Node build leaves out
import type { Gemma3TextConfig } from '../engine/index.ts';
import { Rng } from '../core/random.ts';
import { createWeights, disposeWeights, lossAt, type ToyWeights } from './model.ts';

/** One chat: the prompt ids (chat template and generation prompt) followed by the answer ids and <end_of_turn>. */
export type TrainingSequence = { ids: number[]; answerStart: number };

export type TrainOptions = {
  seed: number;
  epochs: number;
  /** Upper bound of batch size × padded length. */
  batchTokens: number;
  learningRate: number;
  warmupSteps: number;
  /** Stop after this many steps (the reproduction test runs a few); the schedule stays that of the full run. */
  maxSteps?: number;
  onStep?: (step: StepRecord, totalSteps: number) => void;
};

export type StepRecord = {
  step: number;
  epoch: number;
  loss: number;
  tokenAccuracy: number;
  learningRate: number;
  tokens: number;
  seconds: number;
};

export type TrainResult = { tensors: Map<string, Float32Array>; steps: StepRecord[] };

let backendReady: Promise<void> | undefined;

/** The WebAssembly backend, one thread (the deterministic choice; it is also what Node runs). */
export function useWasmBackend(): Promise<void> {
  backendReady ??= tf.setBackend('wasm').then((ok) => {
    if (!ok) throw new Error('toy training: the TensorFlow.js WebAssembly backend failed to initialise');
  });
  return backendReady;
}

/** Initial weights: Normal(0, 1/√fan-in) for matrices (the embedding: 1/√hidden, so × √hidden is unit scale), zero norms. */
export function initialWeights(config: Gemma3TextConfig, seed: number): ToyWeights {
  const rng = new Rng(`toy-target/init/seed=${seed}`);
  return createWeights(config, (name, shape) => {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (shape.length === 1) return values; // RMSNorm weights act as (1 + w)
    const std = 1 / Math.sqrt(name.endsWith('embed_tokens.weight') ? config.hidden_size : shape[1]!);
    for (let i = 0; i < values.length; i += 2) {
      const r = Math.sqrt(-2 * Math.log(1 - rng.next())) * std;
      const theta = 2 * Math.PI * rng.next();
      values[i] = r * Math.cos(theta);
      if (i + 1 < values.length) values[i + 1] = r * Math.sin(theta);
    }
    return values;
  });
}

/** The epoch's batches: shuffled, then grouped by length within windows so that little is padding. */
export function epochBatches(sequences: readonly TrainingSequence[], batchTokens: number, rng: Rng): number[][] {
  const order = rng.shuffle([...sequences.keys()]);
  const batches: number[][] = [];
  const window = 256;
  for (let start = 0; start < order.length; start += window) {
    const sorted = order
      .slice(start, start + window)
      .sort((a, b) => sequences[a]!.ids.length - sequences[b]!.ids.length || a - b);
    let batch: number[] = [];
    for (const index of sorted) {
      const length = sequences[index]!.ids.length;
      if (length > batchTokens)
        throw new Error(`toy training: a sequence of ${length} tokens exceeds the batch budget ${batchTokens}`);
      if ((batch.length + 1) * length > batchTokens) {
        batches.push(batch);
        batch = [];
      }
      batch.push(index);
    }
    if (batch.length > 0) batches.push(batch);
  }
  return rng.shuffle(batches);
}

/** Inputs of one batch: right-padded ids, and the flat rows and next-token targets of the answer positions. */
function batchTensors(sequences: readonly TrainingSequence[], batch: number[]) {
  const T = Math.max(...batch.map((i) => sequences[i]!.ids.length));
  const ids = new Int32Array(batch.length * T);
  const rows: number[] = [];
  const targets: number[] = [];
  batch.forEach((index, b) => {
    const s = sequences[index]!;
    ids.set(s.ids, b * T);
    for (let p = s.answerStart - 1; p < s.ids.length - 1; p++) {
      rows.push(b * T + p);
      targets.push(s.ids[p + 1]!);
    }
  });
  return {
    batch: { ids, B: batch.length, T },
    rows: Int32Array.from(rows),
    targets: tf.tensor1d(targets, 'int32'),
    count: targets.length,
  };
}

function learningRateAt(step: number, total: number, options: TrainOptions): number {
  if (step < options.warmupSteps) return (options.learningRate * (step + 1)) / options.warmupSteps;
  const progress = (step - options.warmupSteps) / Math.max(1, total - options.warmupSteps);
  return options.learningRate * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * Math.min(1, progress))));
}

const [BETA1, BETA2, EPSILON] = [0.9, 0.98, 1e-8];

/** One Adam step (bias-corrected moments, no weight decay) of one variable. */
function adamUpdate(
  variable: tf.Variable,
  grad: tf.Tensor,
  moments: { m: tf.Variable; v: tf.Variable },
  lr: number,
  t: number,
): void {
  tf.tidy(() => {
    const { m, v } = moments;
    m.assign(tf.add(tf.mul(BETA1, m), tf.mul(1 - BETA1, grad)));
    v.assign(tf.add(tf.mul(BETA2, v), tf.mul(1 - BETA2, tf.square(grad))));
    const update = tf.div(tf.div(m, 1 - BETA1 ** t), tf.add(tf.sqrt(tf.div(v, 1 - BETA2 ** t)), EPSILON));
    variable.assign(tf.sub(variable, tf.mul(lr, update)));
  });
}

export async function trainToy(
  config: Gemma3TextConfig,
  sequences: readonly TrainingSequence[],
  options: TrainOptions,
): Promise<TrainResult> {
  await useWasmBackend();
  const weights = initialWeights(config, options.seed);
  const variables = [...weights.values()];
  const moments = variables.map((v) =>
    tf.tidy(() => ({ m: tf.variable(tf.zerosLike(v), false), v: tf.variable(tf.zerosLike(v), false) })),
  );
  const rng = new Rng(`toy-target/batches/seed=${options.seed}`);
  const epochs = Array.from({ length: options.epochs }, () => epochBatches(sequences, options.batchTokens, rng));
  const total = epochs.reduce((n, e) => n + e.length, 0);
  const stopAt = Math.min(options.maxSteps ?? Infinity, total);
  const steps: StepRecord[] = [];
  const started = performance.now();

  let step = 0;
  for (const [epoch, batches] of epochs.entries()) {
    for (const batch of batches) {
      if (step >= stopAt) break;
      const lr = learningRateAt(step, total, options);
      const { batch: input, rows, targets, count } = batchTensors(sequences, batch);
      let correct = 0;
      const { value, grads } = tf.variableGrads(() => {
        const out = lossAt(config, weights, input, rows, targets);
        correct = out.correct.dataSync()[0]!;
        return out.loss;
      }, variables);
      variables.forEach((variable, i) => adamUpdate(variable, grads[variable.name]!, moments[i]!, lr, step + 1));
      const loss = value.dataSync()[0]!;
      tf.dispose([value, ...Object.values(grads), targets]);
      if (!Number.isFinite(loss)) throw new Error(`toy training diverged at step ${step} (loss ${loss})`);
      const record = {
        step,
        epoch,
        loss,
        tokenAccuracy: correct / count,
        learningRate: lr,
        tokens: count,
        seconds: (performance.now() - started) / 1000,
      };
      steps.push(record);
      options.onStep?.(record, stopAt);
      step++;
      await new Promise((resolve) => setImmediate(resolve)); // let timers (the progress bar) and signals run
    }
  }
  const tensors = new Map([...weights].map(([name, v]) => [name, v.dataSync() as Float32Array]));
  disposeWeights(weights);
  for (const { m, v } of moments) tf.dispose([m, v]);
  return { tensors, steps };
}
