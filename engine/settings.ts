// The engine's settings, resolved once when an engine is created (never at import): the arithmetic's precision, where
// the projections run, the threads and the prefill chunk. The service passes its precision and device on to its
// evaluation processes.
import os from 'node:os';
import { IwiError } from '../core/errors.ts';
import { checkDevice, type Device } from './device.ts';

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
  /** Where the projections run: 'cpu' (default) our kernels, else an onnxruntime provider (device.ts). */
  device?: Device;
  threads?: number;
  /** Rows of a prefill chunk (batch × tokens per sequence); tests use small values to cross chunk boundaries. */
  chunkRows?: number;
};

export type EngineSettings = Readonly<Required<EngineOptionsSettings>>;

/**
 * The settings of an engine: each option as given (checked), else from this machine. None changes a bit of any output:
 * which kernel path computes is the addon's choice (kernels.ts), and every path gives the same bits.
 */
export function resolveSettings(options: EngineOptionsSettings): EngineSettings {
  checkDevice(options.device);
  for (const key of ['chunkRows', 'threads'] as const) {
    const value = options[key];
    if (value !== undefined && !(Number.isInteger(value) && value >= 1))
      throw new IwiError('ENGINE_SETTING_INVALID', `${key} must be a positive integer, got ${value}`);
  }
  return Object.freeze({
    precision: options.precision === undefined ? DEFAULT_PRECISION : checkPrecision(options.precision),
    device: options.device ?? 'cpu',
    threads: options.threads ?? defaultThreads(),
    chunkRows: options.chunkRows ?? CHUNK_ROWS,
  });
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
