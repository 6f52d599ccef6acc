// The "fresh process" of the patch tests: node --import tsx apply-patch-child.ts MODEL_DIR PATCH_DIR PATCH_ID OUT_FILE
// Applies the patch (which must have id PATCH_ID) to the pristine checkpoint and writes the patched tensors as a BF16 safetensors file; on a
// refusal prints {"code", "message"} and exits 3.
import { Checkpoint, writeSafetensors } from '../../../engine/index.ts';
import { isIwiError } from '../../../service/errors.ts';
import { applyPatch } from '../../../service/weights/patch.ts';

const [modelDir, patchDir, patchId, outFile] = process.argv.slice(2);
const checkpoint = Checkpoint.open(modelDir!);
try {
  const patched = applyPatch(checkpoint, patchDir!, patchId!);
  writeSafetensors(
    outFile!,
    [...patched].map(([name, bits]) => ({ name, dtype: 'BF16', shape: checkpoint.info(name).shape, data: bits })),
  );
} catch (error) {
  if (!isIwiError(error)) throw error;
  process.stdout.write(JSON.stringify({ code: error.code, message: error.message }) + '\n');
  process.exitCode = 3;
} finally {
  checkpoint.close();
}
