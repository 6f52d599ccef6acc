// npx iwibench bench engine [--preset gemma-3-1b-shape] [--model-dir DIR] [--prompt-tokens 512] [--decode-tokens 16]
// Prefill tokens/s, decode ms/token at batch 1 and 8, and peak RSS, against references measured in the same run:
// the read bandwidth with wide loads on all threads (the BF16 bound: BF16 weight bytes per token ÷ bandwidth) and
// onnxruntime's float32 MatMul peak. The JavaScript fallback kernel's decode is measured too, in a child process
// (IWIBENCH_NATIVE=0), since which kernel runs is fixed when the engine loads.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Checkpoint } from '../../service/model/checkpoint.ts';
import { kernelInfo, readBandwidth } from '../../service/model/kernels.ts';
import { makeTinyCheckpoint, PRESETS, type Preset } from '../../service/model/tiny-checkpoint.ts';
import { Gemma3Engine, textWeightBytes } from '../../service/model/runtime.ts';
import { parseFlags } from '../args.ts';
import { matMulPeak, timeMs } from './reference.ts';

const defaults = {
  preset: 'gemma-3-1b-shape',
  'model-dir': undefined as string | undefined,
  'prompt-tokens': 512,
  'decode-tokens': 16,
  /** Internal: only the batch-1 decode, one JSON line (the fallback's child process). */
  'decode-only': false,
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  if (!PRESETS.includes(flags.preset as Preset)) throw new Error(`--preset must be one of ${PRESETS.join(', ')}`);
  const dir = flags['model-dir'] ?? path.join(os.tmpdir(), `iwibench-bench-${flags.preset}`);
  if (!flags['model-dir'] && !existsSync(dir)) {
    process.stderr.write(`making ${flags.preset} checkpoint in ${dir} …\n`);
    makeTinyCheckpoint({ out: dir, preset: flags.preset as Preset, seed: 0 });
  }
  const checkpoint = Checkpoint.open(dir);
  const c = checkpoint.config;
  const prompt = Array.from({ length: flags['prompt-tokens'] }, (_, i) => 2 + ((i * 7919) % 200_000));
  const decode = async (engine: Gemma3Engine, batch: number, tokens: number, repeats: number) => {
    const prompts = Array.from({ length: batch }, (_, b) => prompt.slice(0, 32 + b));
    // Random weights hit stop ids at will, so decode cost = (N tokens − 1 token) difference over N − 1 steps.
    const withN = await timeMs(() => engine.generate(prompts, { maxNewTokens: tokens }), repeats);
    const withOne = await timeMs(() => engine.generate(prompts, { maxNewTokens: 1 }), repeats);
    return (withN - withOne) / (tokens - 1);
  };

  if (flags['decode-only']) {
    const engine = await Gemma3Engine.create({ checkpoint });
    process.stdout.write(JSON.stringify({ kernel: kernelInfo(), decode_batch_1_ms: await decode(engine, 1, 3, 1) }) + '\n');
    await engine.close();
    return;
  }

  process.stderr.write('measuring references …\n');
  const gbPerSecond = readBandwidth(new Float32Array(2 ** 28).fill(1)); // 1 GiB, wide loads on every kernel thread
  const matmul = await matMulPeak();

  process.stderr.write(`loading ${checkpoint.modelId} …\n`);
  const loadStart = Date.now();
  const engine = await Gemma3Engine.create({ checkpoint });
  await engine.generate([prompt.slice(0, 4)], { maxNewTokens: 1 }); // reads every weight once
  const loadSeconds = (Date.now() - loadStart) / 1000;

  // Bytes read per decoded token: every decoder matrix and the whole tied head, in BF16; embedding rows are negligible.
  const bytesPerToken = textWeightBytes(c);
  const params = bytesPerToken / 2;
  const T = prompt.length;
  process.stderr.write(`prefill ${T} tokens …\n`);
  const prefillMs = await timeMs(() => engine.generate([prompt], { maxNewTokens: 1 }), 2);
  // Prefill FLOPs: every decoder matrix for every token, attention over the average context T/2, the tied head once.
  const embeddingParams = c.vocab_size * c.hidden_size;
  const decoderParams = params - embeddingParams;
  const prefillFlop = T * (2 * decoderParams + 4 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * (T / 2)) + 2 * embeddingParams;
  const prefillGflops = prefillFlop / (prefillMs / 1000) / 1e9;

  process.stderr.write('decode batch 1 and 8 …\n');
  const decode1 = await decode(engine, 1, flags['decode-tokens'], 2);
  const decode8 = await decode(engine, 8, flags['decode-tokens'], 2);
  await engine.close();
  const peakRss = process.resourceUsage().maxRSS * 1024;

  process.stderr.write('fallback kernel, decode batch 1 (child process) …\n');
  const cli = fileURLToPath(new URL('../../bin/iwibench.js', import.meta.url));
  const child = spawnSync(process.execPath, [cli, 'bench', 'engine', '--model-dir', dir, '--decode-only'], { env: { ...process.env, IWIBENCH_NATIVE: '0' }, encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`fallback run failed: ${child.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  const fallback = JSON.parse(child.stdout.trim().split('\n').at(-1)!) as { decode_batch_1_ms: number };

  const boundMs = (bytesPerToken / (gbPerSecond * 1e9)) * 1000;
  const batch8BoundMs = Math.max(boundMs, ((8 * 2 * params) / (matmul.gflopPerSecond * 1e9)) * 1000);
  const report = {
    bench: 'engine',
    model: checkpoint.modelId,
    kernel: kernelInfo(),
    params,
    bf16_bytes_per_token: bytesPerToken,
    load_seconds: loadSeconds,
    prefill: { prompt_tokens: T, ms: prefillMs, tokens_per_second: T / (prefillMs / 1000), gflop_per_second: prefillGflops },
    decode_ms_per_token: { batch_1: decode1, batch_8: decode8, batch_8_tokens_per_second: (8 / decode8) * 1000 },
    fallback_decode_ms_per_token: { batch_1: fallback.decode_batch_1_ms },
    peak_rss_gib: peakRss / 2 ** 30,
    reference: { read_bandwidth_gb_per_s: gbPerSecond, matmul_gflop_per_s: matmul.gflopPerSecond, matmul_n: matmul.n },
    bounds: { bf16_ms_per_token: boundMs, batch_8_ms_per_step: batch8BoundMs },
    ratios: {
      decode_batch_1_vs_bf16_bound: decode1 / boundMs,
      decode_batch_8_vs_bound: decode8 / batch8BoundMs,
      prefill_vs_matmul_peak: prefillGflops / matmul.gflopPerSecond,
      fallback_decode_batch_1_vs_bf16_bound: fallback.decode_batch_1_ms / boundMs,
    },
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  checkpoint.close();
}
