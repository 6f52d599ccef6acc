// `make-toy-target`: the whole recipe of the toy target, from the taskset to a checkpoint folder that our engine and
// Hugging Face transformers both load: corpus → BPE tokenizer → chat-formatted sequences → training → BF16
// safetensors, config.json, tokenizer files, the loss curve and a training record. Deterministic from the seed.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { version_core as tfjsVersion } from '@tensorflow/tfjs-core';
import {
  expectedTextTensors,
  f32ToBf16,
  gemma3TokenizerDir,
  GENERATION_CONFIG,
  parseGemma3Config,
  type TensorToWrite,
  Tokenizer,
  writeSafetensors,
} from '../engine/index.ts';
import { writeFolderAtomic } from '../core/files.ts';
import { PACKAGE_VERSION } from '../core/version.ts';
import { tokenizerConfig, trainBpe } from './bpe.ts';
import { buildCorpus, corpusTexts, type Corpus } from './corpus.ts';
import { trainToy, type StepRecord, type TrainOptions, type TrainingSequence } from './train.ts';

export const TOY_FORMAT = 'iwibench-toy-target/1';

/** Where the committed toy target lives (reproduced bit for bit by `make-toy-target --out toy/target`). */
export const TOY_TARGET_DIR = fileURLToPath(new URL('./target/', import.meta.url));

export const TOY_VOCAB_SIZE = 4096;

/** config.json: Gemma 3 text architecture at toy size; sequences stay shorter than the sliding window. */
export const TOY_CONFIG = Object.freeze({
  architectures: ['Gemma3ForCausalLM'],
  model_type: 'gemma3_text',
  _name_or_path: 'iwibench/toy-target',
  hidden_size: 128,
  intermediate_size: 256,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  head_dim: 32,
  vocab_size: TOY_VOCAB_SIZE,
  rope_theta: 1_000_000,
  rope_local_base_freq: 10_000,
  rope_scaling: null,
  sliding_window: 512,
  sliding_window_pattern: 6,
  query_pre_attn_scalar: 32,
  rms_norm_eps: 1e-6,
  final_logit_softcapping: null,
  attn_logit_softcapping: null,
  hidden_activation: 'gelu_pytorch_tanh',
  max_position_embeddings: 2048,
  bos_token_id: 2,
  eos_token_id: [1, 106],
  pad_token_id: 0,
  attention_bias: false,
  attention_dropout: 0.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
});

export const TOY_TRAINING = Object.freeze({ epochs: 8, batchTokens: 1024, learningRate: 3e-3, warmupSteps: 30 });

export type MakeToyOptions = {
  out: string;
  seed: number;
  /** Stop after this many steps (reproduction checks); the record says so. */
  maxSteps?: number;
  onStep?: TrainOptions['onStep'];
  log?: (message: string) => void;
};

export type ToyTargetRecord = {
  format: typeof TOY_FORMAT;
  versions: { package: string; family_version: string; tfjs: string };
  args: { seed: number; max_steps: number | null };
  training: typeof TOY_TRAINING & { backend: 'wasm (one thread)' };
  corpus: {
    examples: number;
    sequences_tokens: number;
    answer_tokens: number;
    seeds: Record<string, number[]>;
    sha256: string;
  };
  tokenizer: { vocab_size: number; sha256: string };
  result: { steps: number; seconds: number; final_loss: number; final_token_accuracy: number };
};

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** One line per step; numbers as JavaScript prints them, so equal lines mean bit-equal float32 losses. */
export function lossCsv(steps: readonly StepRecord[]): string {
  const rows = steps.map((s) =>
    [s.step, s.epoch, s.loss, s.tokenAccuracy, s.learningRate, s.tokens, s.seconds.toFixed(1)].join(','),
  );
  return ['step,epoch,loss,token_accuracy,learning_rate,tokens,seconds', ...rows].join('\n') + '\n';
}

/** The output folder is replaced at the end: only a missing or empty folder, or an earlier checkpoint, may be. */
function assertReplaceable(out: string): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new Error(`--out ${out} is a file, not a folder: refusing to replace it`);
  const entries = readdirSync(out);
  if (entries.length > 0 && !entries.includes('config.json'))
    throw new Error(
      `--out ${out} holds files but no config.json: refusing to replace a folder that is not a checkpoint`,
    );
}

/** Each chat as the model sees it: the prompt with the generation prompt, the answer, and <end_of_turn> to stop. */
export function trainingSequences(corpus: Corpus, tokenizer: Tokenizer): TrainingSequence[] {
  const endOfTurn = tokenizer.tokenToId('<end_of_turn>')!;
  return corpus.examples.map(({ messages, answer }) => {
    const prompt = tokenizer.chatIds(messages);
    return { ids: [...prompt, ...tokenizer.encodeRaw(answer), endOfTurn], answerStart: prompt.length };
  });
}

export async function makeToyTarget(options: MakeToyOptions): Promise<ToyTargetRecord> {
  const log = options.log ?? (() => {});
  if (!Number.isSafeInteger(options.seed) || options.seed < 0)
    throw new Error(`seed must be a non-negative integer, got ${options.seed}`);
  assertReplaceable(options.out);
  return writeFolderAtomic(options.out, async (temp) => {
    // The corpus uses the Gemma tokenizer only for the episode specs' relevant token ids, which it does not keep.
    const corpus = buildCorpus(await Tokenizer.load(gemma3TokenizerDir()));
    const tokenizerJson = JSON.stringify(trainBpe(corpusTexts(corpus), { vocabSize: TOY_VOCAB_SIZE }));
    writeFileSync(path.join(temp, 'tokenizer.json'), tokenizerJson);
    writeFileSync(path.join(temp, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig(), null, 2) + '\n');
    const tokenizer = await Tokenizer.load(temp);
    log(`corpus: ${corpus.examples.length} chats; tokenizer: ${tokenizer.vocabSize} tokens`);

    const sequences = trainingSequences(corpus, tokenizer);
    const config = parseGemma3Config({ ...TOY_CONFIG });
    const { tensors, steps } = await trainToy(config, sequences, {
      seed: options.seed,
      ...TOY_TRAINING,
      maxSteps: options.maxSteps,
      onStep: options.onStep,
    });

    const shapes = expectedTextTensors(config);
    const toWrite: TensorToWrite[] = [...tensors].map(([name, values]) => ({
      name,
      dtype: 'BF16',
      shape: shapes.get(name)!,
      data: f32ToBf16(values),
    }));
    writeSafetensors(path.join(temp, 'model.safetensors'), toWrite, {
      format: 'pt',
      producer: `iwibench make-toy-target --seed ${options.seed}`,
    });
    writeFileSync(path.join(temp, 'config.json'), JSON.stringify(TOY_CONFIG, null, 2) + '\n');
    writeFileSync(path.join(temp, 'generation_config.json'), JSON.stringify(GENERATION_CONFIG, null, 2) + '\n');
    writeFileSync(path.join(temp, 'loss.csv'), lossCsv(steps));
    const last = steps.at(-1)!;
    const record: ToyTargetRecord = {
      format: TOY_FORMAT,
      versions: { package: PACKAGE_VERSION, family_version: corpus.familyVersion, tfjs: tfjsVersion },
      args: { seed: options.seed, max_steps: options.maxSteps ?? null },
      training: { ...TOY_TRAINING, backend: 'wasm (one thread)' },
      corpus: {
        examples: corpus.examples.length,
        sequences_tokens: sequences.reduce((n, s) => n + s.ids.length, 0),
        answer_tokens: sequences.reduce((n, s) => n + s.ids.length - s.answerStart, 0),
        seeds: corpus.seeds,
        sha256: sha256(JSON.stringify(corpus.examples)),
      },
      tokenizer: { vocab_size: tokenizer.vocabSize, sha256: sha256(tokenizerJson) },
      result: {
        steps: steps.length,
        seconds: Math.round(last.seconds),
        final_loss: last.loss,
        final_token_accuracy: last.tokenAccuracy,
      },
    };
    writeFileSync(path.join(temp, 'training.json'), JSON.stringify(record, null, 2) + '\n');
    return record;
  });
}
