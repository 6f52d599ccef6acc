// npx iwibench export-patched --model-dir DIR --patch PATCH_DIR --patch-id SHA256 --out OUT_DIR [--peft] [--revision R] [--model-id M]
// A complete patched checkpoint folder (same files; only the touched tensors' bytes differ) that Hugging Face
// transformers loads like the original; with --peft, a low_rank_add-only patch also as a LoRA adapter in OUT_DIR/peft/.
// The patch is verified first (its id, base, digests): a folder that does not hold patch --patch-id, or a patch
// that does not reproduce its recorded digests, is refused. Prints a summary (--json: what it wrote, as JSON).
import { Checkpoint } from '../engine/index.ts';
import { exportPatched } from '../service/weights/index.ts';
import { defineCommand, parseCommand } from './args.ts';
import { count, JSON_FLAG_DEFAULTS, JSON_FLAG_HELP, printResult } from './summary.ts';

const defaults = {
  'model-dir': undefined as string | undefined,
  patch: undefined as string | undefined,
  'patch-id': undefined as string | undefined, // the id the patch folder must hold
  out: undefined as string | undefined,
  peft: false,
  overwrite: false,
  // The pinned base the patch names; default: config.json's _name_or_path and "local", as the store records them.
  'model-id': undefined as string | undefined,
  revision: undefined as string | undefined,
  ...JSON_FLAG_DEFAULTS,
};

export const command = defineCommand({
  usage: 'export-patched',
  description: 'A complete patched checkpoint folder (and with --peft a LoRA adapter); the patch is verified first.',
  examples: [
    'npx iwibench export-patched --model-dir toy/target --patch runs/prime/patch --patch-id SHA256 --out runs/patched --peft',
  ],
  defaults,
  help: {
    'model-dir': 'the base checkpoint folder',
    patch: 'the patch folder (patch.json, patch.safetensors)',
    'patch-id': 'the id the patch folder must hold (as submit reported it)',
    out: 'the folder to write',
    peft: 'also write OUT/peft/ (LoRA) for a low_rank_add-only patch on attention/MLP projections',
    overwrite: 'replace OUT if it exists',
    'model-id': "the pinned base the patch names; default config.json's _name_or_path",
    revision: 'the base revision the patch names; default "local"',
    ...JSON_FLAG_HELP,
  },
  required: ['model-dir', 'patch', 'patch-id', 'out'],
});

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseCommand(argv, command);
  const checkpoint = Checkpoint.open({
    modelDir: flags['model-dir'],
    modelId: flags['model-id'],
    revision: flags.revision,
  });
  try {
    const started = Date.now();
    const result = exportPatched({
      checkpoint,
      patch: { dir: flags.patch!, id: flags['patch-id']! },
      outDir: flags.out!,
      peft: flags.peft,
      overwrite: flags.overwrite,
    });
    const seconds = (Date.now() - started) / 1000;
    printResult(
      flags.json,
      'export-patched',
      { ...result, seconds },
      {
        wrote: [
          [
            result.outDir,
            `the patched checkpoint: ${count(result.tensors.length, 'tensor')} rewritten in ${count(result.shards.length, 'shard')}`,
          ],
          ...(result.peft ? [[result.peft.dir, `the LoRA adapter, rank ${result.peft.rank}`] as const] : []),
        ],
        figures: [`patch ${result.patchId}, ${seconds.toFixed(1)} s`],
      },
    );
  } finally {
    checkpoint.close();
  }
}
