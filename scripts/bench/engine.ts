// npx iwibench bench engine [--preset gemma-3-1b-shape] [--model-dir DIR] [--prompt-tokens 512] [--decode-tokens 16]
//   [--device cpu|cuda|webgpu|ort-cpu] [--precision bf16|float32] [--rounds 1]
// Prefill tokens/s, decode ms/token at batch 1 and 8, inspection of the prompt's positions (log-probabilities and top 5
// at each), and the engine's peak RSS, against references measured in the
// same run, right before and right after each figure (`bench machine`, in a child process, so that its buffers are
// not in this process's peak): the read bandwidth with wide loads on all threads (the BF16 bound: BF16 weight bytes
// per token ÷ bandwidth) and onnxruntime's float32 MatMul peak. Each figure's bound uses the mean of its two
// references, and `reference_moved` says how far they moved apart while it ran. `--rounds N` measures the three
// figures N times in turn, each with its own references (`rounds`), and prints the medians: on a machine whose
// neighbours come and go within minutes, one round can be another machine's. The JavaScript fallback kernel's
// batch-1 rate is measured on a slice of one decoder matrix, and the decode time it implies (BF16 bytes per token ÷
// that rate) printed beside it: a whole fallback decode step at 1B takes seconds. The kernels take the widest path
// this CPU runs; IWIBENCH_ISA=avx2 (or portable, avx512) measures a lower one.
import {
  checkDevice,
  checkPrecision,
  DEFAULT_PRECISION,
  Checkpoint,
  Gemma3Engine,
  jsKernels,
  kernelInfo,
  matmulBf16,
  textWeightBytes,
} from '../../engine/index.ts';
import { parseFlags } from '../args.ts';
import { benchCheckpointDir } from './checkpoint.ts';
import { benchHeader } from './header.ts';
import { machineNow, type MachineReferences } from './machine.ts';
import { median, timeMs } from './reference.ts';

const defaults = {
  preset: 'gemma-3-1b-shape',
  'model-dir': undefined as string | undefined,
  'prompt-tokens': 512,
  'decode-tokens': 16,
  device: 'cpu',
  precision: DEFAULT_PRECISION as string,
  rounds: 1,
};

/** A figure measured between two probes of the machine: the figure, and the references before and after it. */
async function bracketed<T>(
  measure: () => Promise<T>,
): Promise<{ value: T; before: MachineReferences; after: MachineReferences }> {
  const before = machineNow();
  const value = await measure();
  return { value, before, after: machineNow() };
}

type Figures = { [key: string]: number | Figures };

/** The median of each number over objects of the same shape (the rounds' figures). */
export function medianLeaves<T extends Figures>(objects: T[]): T {
  const [first] = objects;
  if (!first) throw new Error('no rounds to take the median of');
  const out: Figures = {};
  for (const [key, value] of Object.entries(first)) {
    out[key] =
      typeof value === 'number'
        ? median(objects.map((o) => o[key] as number))
        : medianLeaves(objects.map((o) => o[key] as Figures));
  }
  return out as T;
}

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults);
  if (!Number.isInteger(flags.rounds) || flags.rounds < 1) throw new Error('--rounds must be a whole number ≥ 1');
  const device = flags.device;
  checkDevice(device);
  const precision = checkPrecision(flags.precision, '--precision');
  const dir = benchCheckpointDir(flags.preset, flags['model-dir']);
  const checkpoint = Checkpoint.open(dir);
  const c = checkpoint.config;
  const prompt = Array.from({ length: flags['prompt-tokens'] }, (_, i) => 2 + ((i * 7919) % 200_000));
  /**
   * Milliseconds per decode step: the time from the first decode step's next-token choice (after every prompt's
   * prefill) to the last, over the steps between them, median of `repeats` calls. Random weights stop sequences at will, so what is counted is
   * the steps that ran; the prefill is not in it.
   */
  const decode = async (engine: Gemma3Engine, batch: number, tokens: number, repeats: number) => {
    const prompts = Array.from({ length: batch }, (_, b) => prompt.slice(0, 32 + b));
    const perStep: number[] = [];
    for (let call = 0; call <= repeats; call++) {
      const starts: number[] = [];
      let previous = Infinity;
      // onLogits runs for each live sequence in order within a step: a new step starts when the index goes back.
      // The first such start follows the first prompt's prefill, the others' prefills come before the second.
      const onLogits = (b: number) => {
        if (b <= previous) starts.push(performance.now());
        previous = b;
      };
      await engine.generate(prompts, { maxNewTokens: tokens, onLogits });
      if (starts.length < 3)
        throw new Error(`batch ${batch}: every sequence stopped within its first step; nothing to time`);
      if (call > 0) perStep.push((starts.at(-1)! - starts[1]!) / (starts.length - 2)); // call 0 warms up
    }
    return median(perStep);
  };

  process.stderr.write(`loading ${checkpoint.modelId} …\n`);
  const loadStart = Date.now();
  const engine = await Gemma3Engine.create({ checkpoint, device, precision });
  await engine.generate([prompt.slice(0, 4)], { maxNewTokens: 1 }); // reads every weight once
  const loadSeconds = (Date.now() - loadStart) / 1000;

  // Bytes read per decoded token: every decoder matrix and the whole tied head, in BF16; embedding rows are negligible.
  const bytesPerToken = textWeightBytes(c);
  const params = bytesPerToken / 2;
  const T = prompt.length;
  // Prefill FLOPs: every decoder matrix for every token, attention over the average context T/2, the tied head once.
  const embeddingParams = c.vocab_size * c.hidden_size;
  const decoderParams = params - embeddingParams;
  const prefillFlop =
    T * (2 * decoderParams + 4 * c.num_hidden_layers * c.num_attention_heads * c.head_dim * (T / 2)) +
    2 * embeddingParams;

  type Bracket = { before: MachineReferences; after: MachineReferences };
  type Reference = 'read_gb_per_s' | 'matmul_gflop_per_s';
  const mean = (b: Bracket, key: Reference) => (b.before[key] + b.after[key]) / 2;
  /** How far the two references of a figure moved apart: |after − before| ÷ their mean. */
  const moved = (b: Bracket, key: Reference) => Math.abs(b.after[key] - b.before[key]) / mean(b, key);
  const pair = (b: Bracket, key: Reference) => [b.before[key], b.after[key]];

  /** One round: the prefill, then decode at batch 1 and 8, each between two probes of the machine. */
  const measureRound = async (round: number) => {
    const of = flags.rounds > 1 ? ` (round ${round + 1} of ${flags.rounds})` : '';
    process.stderr.write(`prefill ${T} tokens${of} …\n`);
    const prefill = await bracketed(() => timeMs(() => engine.generate([prompt], { maxNewTokens: 1 }), 3));
    process.stderr.write(`decode batch 1 and 8${of} …\n`);
    const decode1 = await bracketed(() => decode(engine, 1, flags['decode-tokens'], 3));
    const decode8 = await bracketed(() => decode(engine, 8, flags['decode-tokens'], 3));
    process.stderr.write(`inspect ${T} positions${of} …\n`);
    const inspect = await bracketed(() =>
      timeMs(() => engine.inspect([{ ids: prompt, start: 0, end: T }], { layers: [], topK: 5 }), 3),
    );
    const prefillGflops = prefillFlop / (prefill.value / 1000) / 1e9;
    const boundMs = (bytesPerToken / (mean(decode1, 'read_gb_per_s') * 1e9)) * 1000;
    const batch8BoundMs = Math.max(
      (bytesPerToken / (mean(decode8, 'read_gb_per_s') * 1e9)) * 1000,
      ((8 * 2 * params) / (mean(decode8, 'matmul_gflop_per_s') * 1e9)) * 1000,
    );
    // Inspection is the prefill with the head at every position: the prefill's time, then the head's product at
    // every other position at the MatMul peak (its log-softmax is the rest).
    const inspectBoundMs =
      prefill.value + ((2 * (T - 1) * embeddingParams) / (mean(inspect, 'matmul_gflop_per_s') * 1e9)) * 1000;
    const figures = {
      prefill: { ms: prefill.value, tokens_per_second: T / (prefill.value / 1000), gflop_per_second: prefillGflops },
      decode_ms_per_token: {
        batch_1: decode1.value,
        batch_8: decode8.value,
        batch_8_tokens_per_second: (8 / decode8.value) * 1000,
      },
      inspect: { positions: T, ms: inspect.value },
      bounds: { bf16_ms_per_token: boundMs, batch_8_ms_per_step: batch8BoundMs, inspect_ms: inspectBoundMs },
      ratios: {
        decode_batch_1_vs_bf16_bound: decode1.value / boundMs,
        decode_batch_8_vs_bound: decode8.value / batch8BoundMs,
        prefill_vs_matmul_peak: prefillGflops / mean(prefill, 'matmul_gflop_per_s'),
        inspect_vs_bound: inspect.value / inspectBoundMs,
      },
    };
    // Before and after each figure (`bench machine`): read with the kernel's widest loads on every thread, best of
    // 20 passes over 256 MiB; onnxruntime's [n, n]² MatMul, median of 5.
    const reference = {
      prefill: { matmul_gflop_per_s: pair(prefill, 'matmul_gflop_per_s') },
      decode_batch_1: { read_gb_per_s: pair(decode1, 'read_gb_per_s') },
      decode_batch_8: {
        read_gb_per_s: pair(decode8, 'read_gb_per_s'),
        matmul_gflop_per_s: pair(decode8, 'matmul_gflop_per_s'),
      },
      inspect: { matmul_gflop_per_s: pair(inspect, 'matmul_gflop_per_s') },
    };
    const referenceMoved = {
      prefill: moved(prefill, 'matmul_gflop_per_s'),
      decode_batch_1: moved(decode1, 'read_gb_per_s'),
      decode_batch_8: Math.max(moved(decode8, 'read_gb_per_s'), moved(decode8, 'matmul_gflop_per_s')),
      inspect: moved(inspect, 'matmul_gflop_per_s'),
    };
    return { figures, reference, referenceMoved, probe: decode1.before };
  };
  const rounds = [];
  for (let round = 0; round < flags.rounds; round++) rounds.push(await measureRound(round));
  const figures = medianLeaves(rounds.map((r) => r.figures));

  // On a device: how many tensors went to it, and the most times one did (1: each once, over every call above).
  const uploads = engine.deviceUploads && {
    tensors: engine.deviceUploads.size,
    most_per_tensor: Math.max(...engine.deviceUploads.values()),
  };
  await engine.close();
  const peakRss = process.resourceUsage().maxRSS * 1024; // this process's: the references ran in their own

  process.stderr.write('fallback kernel, batch 1 …\n');
  const rows = Math.min(256, c.intermediate_size);
  const slice = new Uint16Array(rows * c.hidden_size).fill(0x3c00);
  const x = new Float32Array(c.hidden_size).fill(0.5);
  const out = new Float32Array(rows);
  const fallbackMs = await timeMs(async () => matmulBf16(x, slice, out, 1, rows, c.hidden_size, jsKernels), 3);
  const fallbackGbPerSecond = slice.byteLength / (fallbackMs / 1000) / 1e9;

  const probe = rounds[0]!.probe;
  const report = {
    ...benchHeader('engine', { ...flags, 'model-dir': dir }),
    model: checkpoint.modelId,
    device,
    precision,
    ...(uploads ? { device_uploads: uploads } : {}),
    kernel: kernelInfo(),
    params,
    bf16_bytes_per_token: bytesPerToken,
    load_seconds: loadSeconds,
    prefill: {
      prompt_tokens: T,
      ...figures.prefill,
    },
    decode_ms_per_token: figures.decode_ms_per_token,
    inspect: figures.inspect,
    fallback: {
      batch_1_gb_per_s: fallbackGbPerSecond,
      implied_decode_batch_1_ms: (bytesPerToken / (fallbackGbPerSecond * 1e9)) * 1000,
    },
    peak_rss_gib: peakRss / 2 ** 30,
    reference: {
      read_loads: probe.read_loads,
      read_on_huge_pages: probe.read_on_huge_pages,
      matmul_n: probe.matmul_n,
      // One round: its references; several: each round's, beside its figures and ratios, in `rounds`.
      ...(rounds.length === 1 ? rounds[0]!.reference : {}),
    },
    ...(rounds.length === 1 ? { reference_moved: rounds[0]!.referenceMoved } : {}),
    bounds: figures.bounds,
    ratios: figures.ratios,
    ...(rounds.length > 1
      ? {
          rounds: rounds.map((r) => ({ ...r.figures, reference: r.reference, reference_moved: r.referenceMoved })),
        }
      : {}),
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  checkpoint.close();
}
