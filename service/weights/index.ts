// Public surface of the weight store (service/weights): what the service and the evaluator import.
export { Manifest, TENSOR_KINDS, type ManifestFilter, type ManifestRow, type TensorKind } from './manifest.ts';
export { formatSlice, resolveSlice, type Selection, type SliceDim, type SliceSpec } from './slice.ts';
export { type ArrayOperand, type WriteOp } from './ops.ts';
export { type NestedNumbers, type ReadResult } from './reads.ts';
export { NORM_QUANTILES, type Summary } from './summary.ts';
export { HandleStore, type ArrayHandle, type HandleInfo } from './handles.ts';
export { EpisodeWeights, WeightStore, type WriteOutcome } from './store.ts';
export {
  PATCH_FORMAT,
  applyPatch,
  bf16Sha256,
  loadPatch,
  patchDigest,
  replayPatch,
  writeEpisodePatch,
  type LoadedPatch,
  type PatchJson,
  type PatchRef,
  type Provenance,
  type TensorStats,
} from './patch.ts';
export { exportPatched, type ExportResult } from './export.ts';
