// npx iwibench export-patched --model-dir DIR --patch PATCH_DIR --patch-id SHA256 --out OUT_DIR [--peft] [--revision R] [--model-id M]
// A complete patched checkpoint folder (same files; only the touched tensors' bytes differ) that Hugging Face
// transformers loads like the original; with --peft, a low_rank_add-only patch also as a LoRA adapter in OUT_DIR/peft/.
// The patch is verified first (its id, base, digests): a folder that does not hold patch --patch-id, or a patch
// that does not reproduce its recorded digests, is refused.
import { Checkpoint } from '../service/model/checkpoint.ts';
import { exportPatched } from '../service/weights/index.ts';
import { parseFlags } from './args.ts';

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
};

export async function main(argv: string[]): Promise<void> {
  const { flags } = parseFlags(argv, defaults, { required: ['model-dir', 'patch', 'patch-id', 'out'] });
  const checkpoint = Checkpoint.open({ modelDir: flags['model-dir'], modelId: flags['model-id'], revision: flags.revision });
  try {
    const started = Date.now();
    const result = exportPatched({ checkpoint, patch: { dir: flags.patch!, id: flags['patch-id']! }, outDir: flags.out!, peft: flags.peft, overwrite: flags.overwrite });
    process.stdout.write(JSON.stringify({ ...result, seconds: (Date.now() - started) / 1000 }) + '\n');
  } finally {
    checkpoint.close();
  }
}
