// npx iwibench bench engine [--preset gemma-3-1b-shape] [--model-dir DIR] [--weights initializers|inputs]
// Prefill tokens/s (512-token prompt), decode ms/token at batch 1 and 8, peak RSS, and in the same run the
// machine's read bandwidth and MatMul peak, with the ratios to the bounds they imply.
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Checkpoint } from '../../service/model/checkpoint.ts';
import { makeTinyCheckpoint, PRESETS, type Preset } from '../../service/model/tiny-checkpoint.ts';
import { Gemma3Engine, type Device } from '../../service/model/runtime.ts';
import { numel } from '../../service/model/safetensors.ts';
import { parseFlags } from '../args.ts';
import { matMulPeak, memoryReadBandwidth, timeMs } from './reference.ts';

const defaults = {
  preset: 'gemma-3-1b-shape',
  'model-dir': undefined as string | undefined,
  weights: 'initializers',
  device: 'cpu',
  'prompt-tokens': 512,
  'decode-tokens': 16,
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  if (!PRESETS.includes(flags.preset as Preset)) throw new Error(`--preset must be one of ${PRESETS.join(', ')}`);
  if (flags.weights !== 'initializers' && flags.weights !== 'inputs') throw new Error('--weights must be initializers or inputs');
  const dir = flags['model-dir'] ?? path.join(os.tmpdir(), `iwibench-bench-${flags.preset}`);
  if (!flags['model-dir'] && !existsSync(dir)) {
    process.stderr.write(`making ${flags.preset} checkpoint in ${dir} …\n`);
    makeTinyCheckpoint({ out: dir, preset: flags.preset as Preset, seed: 0 });
  }

  process.stderr.write('measuring references …\n');
  const bandwidth = await memoryReadBandwidth();
  const matmul = await matMulPeak();

  const checkpoint = Checkpoint.open(dir);
  const c = checkpoint.config;
  process.stderr.write(`loading ${checkpoint.modelId} (${flags.weights}) …\n`);
  const loadStart = Date.now();
  const engine = await Gemma3Engine.create({ checkpoint, weights: flags.weights as 'inputs', device: flags.device as Device });
  const loadSeconds = (Date.now() - loadStart) / 1000;

  // Parameters read per decoded token: every decoder matrix, plus the full tied head; embedding rows are negligible.
  const textTensors = [...checkpoint.tensors.values()].filter((t) => t.name.startsWith(c.tensor_prefix));
  const params = textTensors.reduce((a, t) => a + numel(t.shape), 0);
  const bytesPerToken = params * 4; // float32 copies are what the kernels stream

  const T = flags['prompt-tokens'];
  const prompt = Array.from({ length: T }, (_, i) => 2 + ((i * 7919) % 200_000));
  process.stderr.write(`prefill ${T} tokens …\n`);
  const prefillMs = await timeMs(() => engine.generate([prompt], { maxNewTokens: 1 }), 2);
  // Prefill FLOPs: every decoder matrix for every token, attention over the average context T/2, and the tied head
  // once (generate computes logits for the last position only).
  const embeddingParams = c.vocab_size * c.hidden_size;
  const decoderParams = params - embeddingParams;
  const prefillFlop = T * (2 * decoderParams + 4 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * (T / 2)) + 2 * embeddingParams;
  const prefillTokensPerSecond = T / (prefillMs / 1000);

  const N = flags['decode-tokens'];
  const decode = async (batch: number) => {
    const prompts = Array.from({ length: batch }, (_, b) => prompt.slice(0, 32 + b));
    // Stop ids are impossible to avoid on random weights, so decode cost = (N tokens − 1 token) difference.
    const withN = await timeMs(() => engine.generate(prompts, { maxNewTokens: N }), 2);
    const withOne = await timeMs(() => engine.generate(prompts, { maxNewTokens: 1 }), 2);
    return (withN - withOne) / (N - 1);
  };
  process.stderr.write('decode batch 1 and 8 …\n');
  const decode1 = await decode(1);
  const decode8 = await decode(8);
  await engine.close();

  const boundMs = (bytesPerToken / (bandwidth.gbPerSecond * 1e9)) * 1000;
  const report = {
    bench: 'engine',
    model: checkpoint.modelId,
    weights: flags.weights,
    device: flags.device,
    params,
    load_seconds: loadSeconds,
    prefill: { prompt_tokens: T, ms: prefillMs, tokens_per_second: prefillTokensPerSecond, gflop_per_second: prefillFlop / (prefillMs / 1000) / 1e9 },
    decode_ms_per_token: { batch_1: decode1, batch_8: decode8, batch_8_tokens_per_second: (8 / decode8) * 1000 },
    peak_rss_gib: process.resourceUsage().maxRSS / 1024 / 1024,
    reference: { read_bandwidth_gb_per_s: bandwidth.gbPerSecond, matmul_gflop_per_s: matmul.gflopPerSecond, matmul_n: matmul.n },
    ratios: {
      decode_batch_1_vs_bandwidth_bound: decode1 / boundMs,
      bandwidth_bound_ms_per_token: boundMs,
      prefill_vs_matmul_peak: prefillFlop / (prefillMs / 1000) / 1e9 / matmul.gflopPerSecond,
    },
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}
