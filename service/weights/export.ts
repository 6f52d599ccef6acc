// Export a patch as a complete patched checkpoint folder that Hugging Face transformers loads like the original:
// every file copied, and in each safetensors shard that holds a touched tensor, only that tensor's bytes rewritten
// in place (same header, offsets and metadata; a stored tied LM head gets the same bytes as embed_tokens).
// With `peft`, a patch made only of low_rank_add ops on attention/MLP projections is also written as a PEFT LoRA
// adapter in OUT/peft/ (not at the top level: transformers would then load OUT as an adapter). The adapter is the
// exact float32 sum of the ops' α·U·Vᵀ; the patched checkpoint rounds after every op, so the two agree up to BF16
// rounding, not bit for bit.
import {
  closeSync,
  copyFileSync,
  cpSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import { type Checkpoint, SafetensorsFile, writeSafetensors } from '../../engine/index.ts';
import { IwiError } from '../../core/errors.ts';
import { writeAll, writeFolderAtomic, writeJsonAtomic } from '../../core/files.ts';
import { Manifest } from './manifest.ts';
import type { WriteOp } from './ops.ts';
import { PATCH_JSON, PATCH_PROVENANCE, replayPatch, type PatchRef } from './patch.ts';
import { resolveSlice, type DimSelection } from './slice.ts';

export type ExportResult = {
  outDir: string;
  /** The patch exported (its id verified). */
  patchId: string;
  /** Touched tensors, each rewritten in the shard(s) that hold it. */
  tensors: string[];
  shards: string[];
  peft?: { dir: string; rank: number; modules: string[] };
};

/** Write `outDir` (refused if it exists unless `overwrite`), atomically: a temp folder renamed into place. */
export function exportPatched(options: {
  checkpoint: Checkpoint;
  patch: PatchRef;
  outDir: string;
  peft?: boolean;
  overwrite?: boolean;
}): ExportResult {
  const { checkpoint } = options;
  const outDir = path.resolve(options.outDir);
  if (existsSync(outDir) && !options.overwrite)
    throw new IwiError('PATCH_EXISTS', `output folder ${outDir} already exists`);
  if (!path.relative(checkpoint.dir, outDir).startsWith('..'))
    throw new Error(`output folder ${outDir} must not lie inside the checkpoint folder ${checkpoint.dir}`);
  const { tensors, ops, patch } = replayPatch(checkpoint, options.patch.dir, options.patch.id);
  const manifest = Manifest.fromCheckpoint(checkpoint);
  const adapter = options.peft ? peftAdapter(checkpoint, manifest, ops) : undefined; // refuse before writing anything

  return writeFolderAtomic(outDir, (temp) => {
    // HF cache snapshots hold symlinks into blobs/: copy the content, not the links.
    cpSync(checkpoint.dir, temp, { recursive: true, dereference: true });
    const shards = new Set<string>();
    for (const [name, bits] of tensors) {
      const bytes = new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength);
      for (const storedName of [name, ...manifest.resolve(name).aliases]) {
        for (const shard of shardsHolding(checkpoint, storedName)) {
          overwriteTensor(path.join(temp, path.basename(shard)), storedName, bytes);
          shards.add(path.basename(shard));
        }
      }
    }
    // The patch next to the weights, and who made it if known; transformers ignores unknown files.
    copyFileSync(path.join(options.patch.dir, PATCH_JSON), path.join(temp, 'iwibench-patch.json'));
    const provenance = path.join(options.patch.dir, PATCH_PROVENANCE);
    if (existsSync(provenance)) copyFileSync(provenance, path.join(temp, 'iwibench-patch-provenance.json'));
    let peft: ExportResult['peft'];
    if (adapter) {
      const dir = path.join(temp, 'peft');
      mkdirSync(dir);
      writeJsonAtomic(path.join(dir, 'adapter_config.json'), adapter.config);
      writeSafetensors(path.join(dir, 'adapter_model.safetensors'), adapter.tensors, { format: 'pt' });
      peft = { dir: path.join(outDir, 'peft'), rank: adapter.rank, modules: adapter.modules };
    }
    return {
      outDir,
      patchId: patch.id,
      tensors: [...tensors.keys()],
      shards: [...shards].sort(),
      ...(peft ? { peft } : {}),
    };
  });
}

/** Shard files of the checkpoint that store a tensor of this exact name (a stored tied head is not in checkpoint.tensors). */
function shardsHolding(checkpoint: Checkpoint, name: string): string[] {
  const files = readdirSync(checkpoint.dir).filter(
    (f) => f.endsWith('.safetensors') && statSync(path.join(checkpoint.dir, f)).isFile(),
  );
  return files
    .map((f) => path.join(checkpoint.dir, f))
    .filter((file) => {
      const shard = SafetensorsFile.open(file);
      try {
        return shard.tensors.has(name);
      } finally {
        shard.close();
      }
    });
}

/** Replace one tensor's bytes in a copied shard; the header already describes them (same dtype and shape). */
function overwriteTensor(file: string, name: string, bytes: Uint8Array): void {
  const shard = SafetensorsFile.open(file);
  const info = shard.info(name);
  shard.close();
  if (info.dtype !== 'BF16' || info.byteLength !== bytes.byteLength) {
    throw new Error(
      `${path.basename(file)}: tensor "${name}" is ${info.dtype} ${JSON.stringify(info.shape)}, cannot take ${bytes.byteLength} BF16 bytes`,
    );
  }
  const fd = openSync(file, 'r+');
  try {
    writeAll(fd, bytes, info.offset);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

type Adapter = {
  config: Record<string, unknown>;
  tensors: { name: string; dtype: 'F32'; shape: number[]; data: Float32Array }[];
  rank: number;
  modules: string[];
};

/**
 * The LoRA adapter equivalent to a patch of low_rank_add ops: per module, B [out, r] and A [r, in] with the ops'
 * ranks stacked (B rows outside an op's row selection and A columns outside its column selection are zero);
 * modules are zero-padded to one common r and lora_alpha = r, so PEFT's scaling lora_alpha / r is 1.
 */
function peftAdapter(checkpoint: Checkpoint, manifest: Manifest, ops: WriteOp[]): Adapter {
  if (ops.length === 0) throw new IwiError('PEFT_UNSUPPORTED', 'the patch has no ops: there is no adapter to write');
  const perModule = new Map<string, Extract<WriteOp, { op: 'low_rank_add' }>[]>();
  ops.forEach((op, i) => {
    if (op.op !== 'low_rank_add')
      throw new IwiError('PEFT_UNSUPPORTED', `op ${i} is ${op.op}; a PEFT LoRA adapter can only hold low_rank_add ops`);
    const row = manifest.resolve(op.tensor);
    if (row.kind !== 'attention' && row.kind !== 'mlp') {
      throw new IwiError(
        'PEFT_UNSUPPORTED',
        `op ${i} edits "${row.name}" (${row.kind}); LoRA here covers the attention and MLP projections only (a LoRA on the tied embedding would miss the LM head)`,
      );
    }
    perModule.set(row.name, [...(perModule.get(row.name) ?? []), op]);
  });
  const rank = Math.max(...[...perModule.values()].map((list) => list.reduce((r, op) => r + op.u.shape[1]!, 0)));
  const tensors: Adapter['tensors'] = [];
  const modules: string[] = [];
  for (const [name, list] of perModule) {
    const [out, inp] = manifest.resolve(name).shape as [number, number];
    const A = new Float32Array(rank * inp); // [r, in]
    const B = new Float32Array(out * rank); // [out, r]
    let offset = 0;
    for (const op of list) {
      const [rows, cols] = resolveSlice(op.slice, [out, inp], name).dims as [DimSelection, DimSelection]; // both kept: the selection is 2-d
      const r = op.u.shape[1]!;
      for (let i = 0; i < rows.count; i++) {
        for (let k = 0; k < r; k++)
          B[(rows.start + i * rows.step) * rank + offset + k] = op.alpha * op.u.data[i * r + k]!;
      }
      for (let j = 0; j < cols.count; j++) {
        for (let k = 0; k < r; k++) A[(offset + k) * inp + cols.start + j * cols.step] = op.v.data[j * r + k]!;
      }
      offset += r;
    }
    const module = peftModulePath(checkpoint, name);
    modules.push(module);
    tensors.push({ name: `base_model.model.${module}.lora_A.weight`, dtype: 'F32', shape: [rank, inp], data: A });
    tensors.push({ name: `base_model.model.${module}.lora_B.weight`, dtype: 'F32', shape: [out, rank], data: B });
  }
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: checkpoint.modelId,
    revision: checkpoint.revision,
    r: rank,
    lora_alpha: rank,
    lora_dropout: 0.0,
    bias: 'none',
    target_modules: modules,
    fan_in_fan_out: false,
    use_rslora: false,
    use_dora: false,
    init_lora_weights: true,
    inference_mode: true,
    modules_to_save: null,
    rank_pattern: {},
    alpha_pattern: {},
  };
  return { config, tensors, rank, modules };
}

/**
 * The module's path in transformers ≥ 4.52: the 4B's hub names `language_model.model.*` load as
 * `model.language_model.*` (Gemma3ForConditionalGeneration._checkpoint_conversion_mapping, gemma3.md §2.2).
 */
function peftModulePath(checkpoint: Checkpoint, tensor: string): string {
  const module = tensor.replace(/\.weight$/, '');
  const prefix = checkpoint.config.tensor_prefix;
  return prefix === 'language_model.model.' ? `model.language_model.${module.slice(prefix.length)}` : module;
}
