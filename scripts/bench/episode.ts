// npx iwibench bench episode [--preset gemma-3-1b-shape] [--model-dir DIR] [--family local_factual_update] [--seed 3]
//   [--limits 8,16,32] [--items 0] [--precision bf16|float32]
// The main job's cost: one fresh-process evaluation of a real episode's items on the pristine weights, as run-prime
// runs it twice, at each batch limit of --limits and at the one the evaluation chooses itself (free memory, then the
// speed probe): generated tokens per second over the generation's seconds, the process's peak RSS, beside
// references measured right before and after each run (`bench machine`): the MatMul peak's rate (tokens per second
// that onnxruntime's float32 MatMul peak allows: peak ÷ (2 × params)) and the bandwidth bound at that batch limit
// (rows in flight × read bandwidth ÷ BF16 bytes per step). Every run's outputs must be the same (they do not depend
// on the batch limit); the command fails if they are not. Beside them, the work: the products the generation
// multiplied (generationFlop), their rate as a fraction of the MatMul peak, and the ceiling that work puts on the
// ratio to the MatMul-peak rate (what the ratio would be if every product ran at the peak: the prompts' tokens are
// work that yields no generated token, so the ratio cannot reach 1).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  Checkpoint,
  DEFAULT_PRECISION,
  checkPrecision,
  kernelInfo,
  textWeightBytes,
  Tokenizer,
  type Precision,
} from '../../engine/index.ts';
import {
  evaluateInFreshProcess,
  type BatchLimit,
  type EvaluationItem,
  type EvaluationRun,
  type ItemOutput,
} from '../../service/evaluate.ts';
import { evaluationProgress, type EvaluationProgress } from '../../service/evaluation-progress.ts';
import { Evaluator, evaluationItems, Taskset, FAMILY_IDS, type FamilyId } from '../../taskset/index.ts';
import { parseFlags, parseIntList } from '../args.ts';
import { benchCheckpointDir } from './checkpoint.ts';
import { benchHeader } from './header.ts';
import { machineNow, type MachineReferences } from './machine.ts';

const defaults = {
  preset: 'gemma-3-1b-shape',
  'model-dir': undefined as string | undefined,
  family: 'local_factual_update',
  seed: 3,
  limits: '8,16,32',
  items: 0, // 0: every item of the episode; N: its first N (a quick run)
  precision: DEFAULT_PRECISION as string, // the engine's arithmetic, as the evaluating commands' --precision
};

/** The flags checked: the family, the batch limits (positive integers) and the item count. */
export function episodeBenchFlags(argv: string[]) {
  const { flags } = parseFlags(argv, defaults);
  if (!FAMILY_IDS.includes(flags.family as FamilyId))
    throw new Error(`--family must be one of ${FAMILY_IDS.join(', ')}, got ${flags.family}`);
  if (!Number.isInteger(flags.seed) || flags.seed < 0) throw new Error('--seed must be a whole number ≥ 0');
  const limits = parseIntList(flags.limits, '--limits');
  if (limits.length === 0 || limits.some((n) => n < 1))
    throw new Error(`--limits must be positive integers separated by commas, got ${flags.limits}`);
  if (!Number.isInteger(flags.items) || flags.items < 0) throw new Error('--items must be a whole number ≥ 0');
  return {
    ...flags,
    family: flags.family as FamilyId,
    limits,
    precision: checkPrecision(flags.precision, '--precision'),
  };
}

/** VmHWM of a running process, in bytes (0 once it is gone). */
function peakRss(pid: number): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * The products a generation multiplied, in FLOP (2 per multiply-add): each sequence's prompt tokens and decode steps
 * through the decoder's matrices, and the head for each choice of a next token (the prompt's last row, then every
 * step; a stop at <eos> or <end_of_turn> is a choice whose token is not kept, a stop at the cap is not a step).
 * Attention's own products are left out (under 1 % at these lengths).
 */
export function generationFlop(params: { decoder: number; head: number }, outputs: ItemOutput[]): number {
  let flop = 0;
  for (const o of outputs) {
    const choices = o.output_tokens + (o.stop_reason === 'eos' || o.stop_reason === 'end_of_turn' ? 1 : 0);
    flop += 2 * (params.decoder * (o.prompt_tokens + choices - 1) + params.head * choices);
  }
  return flop;
}

/**
 * The kernel path an evaluation process takes on this machine (it inherits IWIBENCH_ISA): the products' path in its
 * precision, and the rest's. Every path gives the same bits; this says how fast.
 */
export function productPath(precision: Precision): string {
  const info = kernelInfo();
  if (!info.native) return `the JavaScript fallback (${info.reason})`;
  const products = precision === 'bf16' ? info.paths.productsBf16 : info.paths.productsFloat32;
  return `products on ${products}, attention and pointwise on ${info.paths.attention}`;
}

type Measured = { run: EvaluationRun; generated: number; seconds: number; peakRss: number };

/** One evaluation process at `batch`: its run, its generation's tokens and seconds (progress), its peak RSS. */
async function evaluateOnce(
  job: { location: { modelDir: string }; items: EvaluationItem[]; batch: BatchLimit; precision: Precision },
  work: string,
): Promise<Measured> {
  const out = path.join(work, `outputs-${Date.now()}.json`);
  let last: EvaluationProgress | undefined;
  const listen = (p: EvaluationProgress) => p.out === out && p.phase === 'pristine' && (last = p);
  let peak = 0;
  let timer: NodeJS.Timeout | undefined;
  evaluationProgress.on('progress', listen);
  try {
    const run = await evaluateInFreshProcess({ ...job, patch: null }, out, {
      onStart: (child) => {
        timer = setInterval(() => (peak = Math.max(peak, peakRss(child.pid!))), 100);
      },
    });
    return { run, generated: last?.generatedTokens ?? 0, seconds: last?.seconds ?? run.seconds, peakRss: peak };
  } finally {
    clearInterval(timer);
    evaluationProgress.off('progress', listen);
  }
}

export async function main(argv: string[]): Promise<void> {
  const flags = episodeBenchFlags(argv);
  const dir = benchCheckpointDir(flags.preset, flags['model-dir']);
  const checkpoint = Checkpoint.open(dir);
  const bytesPerStep = textWeightBytes(checkpoint.config);
  const params = bytesPerStep / 2;
  const headParams = checkpoint.config.vocab_size * checkpoint.config.hidden_size; // the tied embedding
  checkpoint.close();
  const taskset = new Taskset({ tokenizer: await Tokenizer.load(dir) });
  const all = evaluationItems(taskset.task({ family: flags.family, seed: flags.seed }).spec);
  const items = flags.items > 0 ? all.slice(0, flags.items) : all;
  const location = { modelDir: dir };
  const chosen = Evaluator.open({ location }).batch; // what an evaluating command gives its processes
  const work = mkdtempSync(path.join(os.tmpdir(), 'iwibench-bench-episode-'));

  const runs = [];
  let first: EvaluationRun | undefined;
  try {
    for (const batch of [...flags.limits.map((maxBatch) => ({ maxBatch })), chosen] as BatchLimit[]) {
      const what = 'maxBatch' in batch ? `batch limit ${batch.maxBatch}` : 'the chosen batch limit';
      process.stderr.write(
        `${flags.family} seed ${flags.seed}: ${items.length} items at ${what}, ${flags.precision} …\n`,
      );
      const before = machineNow();
      const m = await evaluateOnce({ location, items, batch, precision: flags.precision }, work);
      const after = machineNow();
      first ??= m.run;
      if (JSON.stringify(m.run.outputs) !== JSON.stringify(first.outputs))
        throw new Error(`the outputs at ${what} differ from those at ${flags.limits[0]}: they must not`);
      const mean = (key: keyof MachineReferences) => ((before[key] as number) + (after[key] as number)) / 2;
      const tokensPerSecond = m.generated / m.seconds;
      const flop = generationFlop({ decoder: params - headParams, head: headParams }, Object.values(m.run.outputs));
      const matmulRate = (mean('matmul_gflop_per_s') * 1e9) / (2 * params);
      const rows = Math.min(m.run.batch_limit, items.length); // at most, in flight at once
      const bandwidthRate = (rows * mean('read_gb_per_s') * 1e9) / bytesPerStep;
      runs.push({
        batch_limit: m.run.batch_limit,
        rows_in_flight: rows,
        chosen: !('maxBatch' in batch),
        // The chosen limit's speed curve: measured in this process, or read from the machine's cache (the probe's cost
        // is then not in process_seconds).
        speed_curve: m.run.speed_curve,
        generated_tokens: m.generated,
        seconds: m.seconds,
        process_seconds: m.run.seconds,
        generated_tokens_per_second: tokensPerSecond,
        peak_rss_gib: m.peakRss / 2 ** 30,
        reference: {
          matmul_gflop_per_s: [before.matmul_gflop_per_s, after.matmul_gflop_per_s],
          read_gb_per_s: [before.read_gb_per_s, after.read_gb_per_s],
        },
        bounds: { matmul_peak_tokens_per_second: matmulRate, bandwidth_tokens_per_second: bandwidthRate },
        ratios: { vs_matmul_peak: tokensPerSecond / matmulRate, vs_bandwidth_bound: tokensPerSecond / bandwidthRate },
        work: {
          gflop: flop / 1e9,
          gflop_per_s: flop / m.seconds / 1e9,
          vs_matmul_peak: flop / m.seconds / 1e9 / mean('matmul_gflop_per_s'),
          // The ratio to the MatMul-peak rate if all of it ran at the peak.
          ceiling_vs_matmul_peak_rate: (m.generated * 2 * params) / flop,
        },
      });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const report = {
    ...benchHeader('episode', { ...flags, 'model-dir': dir }),
    episode: { family: flags.family, seed: flags.seed, items: items.length, of: all.length, weights: 'pristine' },
    // What computed every figure below: the arithmetic and the product path the evaluation processes took.
    precision: flags.precision,
    product_path: productPath(flags.precision),
    params,
    bf16_bytes_per_step: bytesPerStep,
    runs,
  };
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}
