// The weight store's face (service/weights): every part outside it imports from here (test/core/layers.test.ts).
export { Manifest, TENSOR_KINDS, type ManifestFilter, type ManifestRow, type TensorKind } from './manifest.ts';
export { formatSlice, resolveSlice, type Selection, type SliceDim, type SliceSpec } from './slice.ts';
export { parseRevert, type ArrayOperand, type WriteOp } from './ops.ts';
export { type NestedNumbers, type ReadResult } from './reads.ts';
export { NORM_QUANTILES, type Summary } from './summary.ts';
export { HandleStore, type ArrayHandle, type HandleInfo } from './handles.ts';
export { EpisodeWeights, WeightStore, type WriteOutcome } from './store.ts';
export { PatchedSources } from './patched.ts';
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
