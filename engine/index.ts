// The engine's public face: Gemma 3's text decoder with BF16 weights (runtime.ts and the parts it names), the
// checkpoint and its tokenizer, the weights' formats, the kernels and the worker-thread host. Every part outside
// engine/ imports from here (test/core/layers.test.ts checks it); the files behind it are the engine's own.

// The engine and its calls
export { Gemma3Engine, type EngineOptions, type InspectResult } from './runtime.ts';
export type { GenerateOptions, GenerateResult } from './generate.ts';
export type { CallControl } from './control.ts';
export { MAX_BATCH } from './batch.ts';
export { PROBE_ROWS, chooseBatchLimit, type SpeedPoint } from './batch-limit.ts';
export {
  DEFAULT_PRECISION,
  ENGINE_PROCESS_FLAGS,
  PRECISIONS,
  checkPrecision,
  defaultThreads,
  type EngineSettings,
  type Precision,
} from './settings.ts';
export { CPU_ARITHMETIC, arithmeticName } from './arithmetic.ts';
export { callMemoryBytes, continuousMemoryBytes, textWeightBytes } from './memory.ts';
export { CUDA_INSTALL, DEVICES, checkDevice, prepareDevice, type Device } from './device.ts';
export { EngineHost } from './engine-host.ts';

// The checkpoint: config, tensor names, tokenizer, weights
export { Checkpoint, PINNED_REVISIONS, type CheckpointLocation } from './checkpoint.ts';
// Fetching a checkpoint from the Hugging Face Hub into its cache (hub/)
export { bytesText, fetchCheckpoint, type FetchEvent, type FetchOptions, type FetchResult } from './hub/fetch.ts';
export { HubError, type HubErrorKind } from './hub/errors.ts';
export { hubSettings, type HubSettings } from './hub/settings.ts';
export { repoFolder, snapshotStatus } from './hub/files.ts';
export { parseGemma3Config, type Gemma3TextConfig } from './config.ts';
export {
  TENSOR_KINDS,
  embedTokensName,
  expectedTextTensors,
  finalNormName,
  isVisionTensor,
  kindOf,
  layerOf,
  layerTensorNames,
  tiedAliases,
  type TensorKind,
} from './names.ts';
export { Tokenizer, gemma3TokenizerDir } from './tokenizer.ts';
export {
  checkpointSource,
  copyBf16,
  copyBf16Steps,
  overlaySource,
  readBf16,
  type WeightSource,
} from './weight-source.ts';
export {
  GENERATION_CONFIG,
  PRESETS,
  makeTinyCheckpoint,
  presetConfig,
  presetShapes,
  type Preset,
} from './tiny-checkpoint.ts';

// Formats: BF16, safetensors, .npy, ONNX graphs
export { bf16ToF32, bf16Value, f32ToBf16, f32ToBf16Bits } from './bf16.ts';
export {
  SafetensorsFile,
  numel,
  parseSafetensors,
  writeSafetensors,
  type DType,
  type TensorToWrite,
} from './safetensors.ts';
export { readNpy, writeNpy } from './npy.ts';
export { DataType, GraphBuilder } from './onnx-builder.ts';
// log-softmax over the vocabulary, as inspection computes it (the OpenAI endpoints' generated tokens use it too)
export { LogSoftmax, MAX_TOP_K } from './head.ts';

// The BF16 kernels (the benchmarks time them against their references)
export {
  ISAS,
  adviseHugePages,
  jsKernels,
  kernelInfo,
  matmulBf16,
  matmulBf16Parts,
  nativeKernels,
  peakRate,
  products,
  readBandwidth,
  roundBf16,
  setKernelThreads,
  useIsa,
  widenBf16,
  type Isa,
  type KernelImpl,
  type KernelInfo,
  type PeakKind,
} from './kernels.ts';
