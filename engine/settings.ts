// The engine's settings, resolved once when an engine is created (never at import): the arithmetic's precision, where
// the projections run, the threads, the prefill chunk, which GEMM prompts prefill through and from how many tokens.
// One machine, one value: the service and its evaluation processes resolve the same settings (IWIBENCH_PREFILL_GEMM
// is inherited, the precision passed on).
import os from 'node:os';
import { IwiError } from '../core/errors.ts';
import { checkDevice, type Device } from './device.ts';
import { kernelInfo, vdpbf16psOutpacesFma, type AttentionPath } from './kernels.ts';

/**
 * The prefill GEMM: 'amx', the addon's gemmBf16Parts on AMX's tile unit (BF16 weights where they lie, activations
 * split exactly into three BF16 parts: 1.4–1.8× onnxruntime's float32 MatMul peak here), or 'onnxruntime', its MLAS
 * GEMM on a float32 tile widened from each weight.
 */
export type PrefillGemm = 'amx' | 'onnxruntime';

/**
 * The arithmetic of a forward pass. 'bf16' (the default) follows Hugging Face transformers' Gemma 3 run in
 * torch.bfloat16, as the original benchmark scores: the embeddings and their scale, every product's input and output
 * and the residual stream are rounded to BF16 (ties to even), the norms, attention's softmax and the logits computed
 * in float32 (docs/engine.md, "Precision"). 'float32' is exact float32 arithmetic over the BF16 weights, as HF with
 * torch_dtype=float32.
 */
export type Precision = 'bf16' | 'float32';
export const PRECISIONS: readonly Precision[] = ['bf16', 'float32'];
export const DEFAULT_PRECISION: Precision = 'bf16';

/**
 * Each precision's arithmetic, named for caches of its outputs: a new name whenever the arithmetic changes. bf16/2
 * (2026-12-04): attention's queries, keys and probabilities rounded to BF16 as well.
 */
export const ARITHMETIC: Readonly<Record<Precision, string>> = { float32: 'float32', bf16: 'bf16/2' };

/** `value` as a precision; throws ENGINE_SETTING_INVALID naming `name` if it is none. */
export function checkPrecision(value: unknown, name = 'precision'): Precision {
  if (!PRECISIONS.includes(value as Precision))
    throw new IwiError('ENGINE_SETTING_INVALID', `${name} must be ${PRECISIONS.join(' or ')}, got "${value}"`);
  return value as Precision;
}

/** Default rows of one prefill chunk: enough to keep the kernel at its peak, few enough to bound activations. */
export const CHUNK_ROWS = 512;

/** What a caller may set; everything left out is resolved from the machine (resolveSettings). */
export type EngineOptionsSettings = {
  /** The arithmetic (default 'bf16', as the original benchmark). */
  precision?: Precision;
  /** Where the projections run: 'cpu' (default) our BF16 kernel, else an onnxruntime provider (device.ts). */
  device?: Device;
  threads?: number;
  /** Rows of a prefill chunk (batch × tokens per sequence); tests use small values to cross chunk boundaries. */
  chunkRows?: number;
  /** Prompts of at least this many tokens prefill through the GEMM (default: gemmMinTokensFor(prefillGemm)). */
  gemmMinTokens?: number;
  /** The prefill GEMM (default: IWIBENCH_PREFILL_GEMM, else the best here); tests compare both. */
  prefillGemm?: PrefillGemm;
  /** bf16 precision's kernel where AMX does not multiply (default: IWIBENCH_BF16_KERNEL, else defaultBf16Kernel). */
  bf16Kernel?: Bf16Kernel;
};

export type EngineSettings = Readonly<Required<EngineOptionsSettings>>;

/** The settings of an engine: each option as given (checked), else from the environment and this machine. */
export function resolveSettings(
  options: EngineOptionsSettings,
  env: NodeJS.ProcessEnv = process.env,
  amx = kernelInfo().amx === true,
): EngineSettings {
  checkDevice(options.device);
  for (const key of ['chunkRows', 'gemmMinTokens', 'threads'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isInteger(value) && value >= 1))
      throw new IwiError('ENGINE_SETTING_INVALID', `${key} must be a positive integer, got ${value}`);
  }
  const prefillGemm =
    options.prefillGemm === undefined
      ? prefillGemmFrom(env.IWIBENCH_PREFILL_GEMM, amx)
      : prefillGemmFrom(options.prefillGemm, amx, 'prefillGemm');
  const precision = options.precision === undefined ? DEFAULT_PRECISION : checkPrecision(options.precision);
  const gemmMinTokens = options.gemmMinTokens ?? gemmMinTokensFor(prefillGemm);
  // The default is measured (peakRate) only where our kernel multiplies in bf16: on the CPU, unless AMX takes every
  // product. Elsewhere the setting is never read, and an engine's start-up pays nothing for it.
  const amxTakesAll = prefillGemm === 'amx' && gemmMinTokens === 1;
  const kernelInBf16 = precision === 'bf16' && (options.device ?? 'cpu') === 'cpu' && !amxTakesAll;
  const bf16Kernel =
    options.bf16Kernel !== undefined
      ? bf16KernelFrom(options.bf16Kernel, 'bf16Kernel')
      : env.IWIBENCH_BF16_KERNEL
        ? bf16KernelFrom(env.IWIBENCH_BF16_KERNEL, 'IWIBENCH_BF16_KERNEL')
        : kernelInBf16
          ? defaultBf16Kernel()
          : 'widen';
  return Object.freeze({
    bf16Kernel,
    precision,
    device: options.device ?? 'cpu',
    threads: options.threads ?? defaultThreads(),
    chunkRows: options.chunkRows ?? CHUNK_ROWS,
    prefillGemm,
    gemmMinTokens,
  });
}

/**
 * bf16 precision's kernel where AMX does not multiply (x rounded to BF16 first on every one):
 * - 'widen': BF16 widened to float32 and FMAs in the float32 kernel's 8-lane order (matmulBf16Parts), the fallback's
 *   bits; the fastest on this project's Xeons;
 * - 'vdpbf16ps': VDPBF16PS's pair order on that instruction (dotBf16Parts);
 * - 'fma': the same pair order as two FMAs a step, so that a machine without VDPBF16PS gives a VDPBF16PS machine's
 *   bits (and the fallback too).
 * Like AMX's, the choice changes bits (within float32 rounding), never batch invariance.
 */
export type Bf16Kernel = 'widen' | 'vdpbf16ps' | 'fma';
export const BF16_KERNELS: readonly Bf16Kernel[] = ['widen', 'vdpbf16ps', 'fma'];

/** VDPBF16PS where it out-multiplies FMAs by half again (measured), else the widened float32 kernel. */
export function defaultBf16Kernel(): Bf16Kernel {
  return vdpbf16psOutpacesFma() ? 'vdpbf16ps' : 'widen';
}

/** The bf16 kernel a setting asks for; throws if it names none, or VDPBF16PS where the addon lacks it. */
function bf16KernelFrom(setting: string, name: string): Bf16Kernel {
  if (!BF16_KERNELS.includes(setting as Bf16Kernel))
    throw new IwiError('ENGINE_SETTING_INVALID', `${name} must be ${BF16_KERNELS.join(', ')}, got "${setting}"`);
  if (setting === 'vdpbf16ps' && !kernelInfo().vdpbf16ps)
    throw new IwiError(
      'ENGINE_SETTING_INVALID',
      `${name} is vdpbf16ps, but the kernel was not built with AVX-512 BF16`,
    );
  return setting as Bf16Kernel;
}

/** The prefill GEMM a setting asks for (unset: AMX where the addon has it); throws if it names none or one not here. */
export function prefillGemmFrom(
  setting: string | undefined,
  amx: boolean,
  name = 'IWIBENCH_PREFILL_GEMM',
): PrefillGemm {
  if (setting === undefined || setting === '') return amx ? 'amx' : 'onnxruntime';
  if (setting !== 'amx' && setting !== 'onnxruntime')
    throw new IwiError('ENGINE_SETTING_INVALID', `${name} must be amx or onnxruntime, got "${setting}"`);
  if (setting === 'amx' && !amx)
    throw new IwiError(
      'ENGINE_SETTING_INVALID',
      `${name} is amx, but AMX is not available here (kernelInfo().amx is false)`,
    );
  return setting;
}

/**
 * Prompts of at least this many tokens are prefilled through the GEMM, shorter ones in our kernel: on AMX every
 * prompt (as every decode step: decodesOnGemm), else about where the two cross on a 1B layer's matrices
 * (docs/engine.md, "Numerics"): 128 with the AVX-512 kernel and 64 with AVX2 (and the fallback).
 */
export function gemmMinTokensFor(gemm: PrefillGemm): number {
  if (gemm === 'amx') return 1;
  return kernelInfo().vectorBits === 512 ? 128 : 64;
}

/**
 * Decode steps and the tied head go through the prefill GEMM where it is AMX's: from 16 rows it runs 1.8–2.7× our
 * kernel's rate and from 1 to 8 rows about as fast (docs/benchmarks.md, "Fresh arrays, graph runs and AMX for every
 * product"). Each row's products still depend on that row alone, so a batch gives each sequence alone. onnxruntime's
 * GEMM widens every weight per call: decode stays in the kernel there.
 */
export function decodesOnGemm(settings: Pick<EngineSettings, 'prefillGemm'>): boolean {
  return settings.prefillGemm === 'amx';
}

/**
 * Where a prefill chunk's attention runs on the CPU (attendChunk): on AMX's tile unit in bf16 precision where the
 * products are there (queries, keys and values are BF16 values then, and the probabilities are rounded to BF16), else
 * with float32 FMAs. At 1B a 512-token chunk's attention took 2.9 ms a layer with FMAs, 0.9 ms on the tile unit
 * (docs/engine.md, "The pointwise work and attention on the CPU").
 */
export function attentionPathFor(
  settings: Pick<EngineSettings, 'precision' | 'prefillGemm'>,
  headDim: number,
): AttentionPath {
  return settings.precision === 'bf16' && settings.prefillGemm === 'amx' && headDim % 16 === 0 ? 'amx' : 'fma';
}

/**
 * One onnxruntime thread per logical CPU. onnxruntime's own default counts physical cores, which on this kind of
 * 2-vCPU machine is 1: half the memory bandwidth a decode step needs (measured: 220 → 130 ms/token at 1B).
 */
export function defaultThreads(): number {
  return os.availableParallelism();
}

/**
 * Node flags of a process started to run the engine (an evaluation process, a service started by a command). V8's
 * concurrent GC re-marks the whole JS heap (~220 MB, half of it the tokenizer) on helper threads; on a 2-core machine
 * those threads take cores from the kernel's pool, whose products ran at 0.55–0.6 of their rate with the marking on
 * the main thread while each decode step allocated hundreds of MB of typed arrays (docs/benchmarks.md, "GC"; the
 * call's buffers, call-buffers.ts, have since made such collections rare).
 */
export const ENGINE_PROCESS_FLAGS: readonly string[] = ['--single-threaded-gc'];
