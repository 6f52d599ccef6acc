// npx iwibench bench toy [--steps 20] [--batch-tokens 1024]
// Training throughput of the toy target (TensorFlow.js, WebAssembly backend, one thread) in tokens/s and GFLOP/s,
// against two references taken in the same run: the same backend's plain MatMul at the toy's shapes (what the
// training could reach at best) and onnxruntime's MatMul peak on both cores (the engine's; it cannot train).
import * as tf from '@tensorflow/tfjs-core';
import { gemma3TokenizerDir, parseGemma3Config, Tokenizer } from '../../engine/index.ts';
import { buildCorpus } from '../../toy/corpus.ts';
import { TOY_CONFIG, TOY_TARGET_DIR, trainingSequences } from '../../toy/target.ts';
import { trainToy, useWasmBackend } from '../../toy/train.ts';
import { parseFlags } from '../args.ts';
import { benchHeader } from './header.ts';
import { matMulPeak } from './reference.ts';

const defaults = { steps: 20, 'batch-tokens': 1024 };

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  const config = parseGemma3Config({ ...TOY_CONFIG });
  const tokenizer = await Tokenizer.load(TOY_TARGET_DIR);
  const sequences = trainingSequences(buildCorpus(await Tokenizer.load(gemma3TokenizerDir())), tokenizer);
  await useWasmBackend();
  const wasmMatMul = wasmMatMulGflops(flags['batch-tokens'], config.hidden_size, config.intermediate_size);
  const { steps } = await trainToy(config, sequences, {
    seed: 0,
    epochs: 1,
    batchTokens: flags['batch-tokens'],
    learningRate: 1e-3,
    warmupSteps: 1,
    maxSteps: flags.steps,
  });
  const timed = steps.slice(1); // the first step compiles and allocates
  const seconds = timed.at(-1)!.seconds - steps[0]!.seconds;
  // Training FLOPs per token: 3 × (forward 2 × matrix parameters of the decoder), the tied head on answer tokens only.
  const {
    hidden_size: H,
    intermediate_size: I,
    num_attention_heads: nH,
    num_key_value_heads: nKV,
    head_dim: D,
    num_hidden_layers: L,
    vocab_size: V,
  } = config;
  const perLayer = H * nH * D * 2 + H * nKV * D * 2 + 3 * H * I;
  const tokens = timed.reduce((n, s) => n + s.tokens, 0); // answer tokens (loss positions)
  const allTokens = timed.length * flags['batch-tokens']; // upper bound of padded positions
  const flops = 6 * (allTokens * L * perLayer + tokens * H * V);
  const ort = await matMulPeak();
  const figures = {
    ...benchHeader('toy', flags),
    steps: timed.length,
    seconds_per_step: seconds / timed.length,
    padded_tokens_per_second: allTokens / seconds,
    training_gflop_per_second: flops / seconds / 1e9,
    reference_tfjs_wasm_matmul_gflop_per_second: wasmMatMul,
    reference_onnxruntime_matmul_gflop_per_second: ort.gflopPerSecond,
    ratio_to_tfjs_matmul: flops / seconds / 1e9 / wasmMatMul,
  };
  process.stdout.write(JSON.stringify(figures, null, 2) + '\n');
}

/** The WebAssembly backend's plain product [M, H] · [H, I], the toy's widest matrix: GFLOP/s of the best of 5 rounds. */
function wasmMatMulGflops(M: number, H: number, I: number): number {
  const a = tf.randomNormal([M, H]);
  const b = tf.randomNormal([H, I]);
  tf.matMul(a, b).dispose();
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const started = performance.now();
    // The WebAssembly backend computes at the call; no tf.tidy around a typed array (it walks every element).
    for (let i = 0; i < 20; i++) tf.matMul(a, b).dispose();
    best = Math.min(best, (performance.now() - started) / 1000 / 20);
  }
  tf.dispose([a, b]);
  return (2 * M * H * I) / best / 1e9;
}
