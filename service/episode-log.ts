// The op log of an episode on disk, so a killed service loses no recorded op: op i is written (atomically) as
// ops/<i>.json with its array operands in ops/<i>.safetensors (F32, exactly the arrays the store used), before the
// write's reply is sent. state.json's op_count says how many of them are live (a revert lowers it; later ops
// overwrite the files).
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SafetensorsFile, type TensorToWrite, writeSafetensors } from '../engine/index.ts';
import type { ArrayOperand, WriteOp } from './weights/index.ts';
import { writeJsonAtomic } from '../core/files.ts';

const ARRAY_FIELDS = ['values', 'u', 'v'] as const;

function opFile(dir: string, index: number, ext: 'json' | 'safetensors'): string {
  return path.join(dir, 'ops', `${String(index).padStart(6, '0')}.${ext}`);
}

export function writeOp(dir: string, index: number, op: WriteOp): void {
  const json: Record<string, unknown> = { ...op };
  const arrays: TensorToWrite[] = [];
  for (const field of ARRAY_FIELDS) {
    const operand = (op as Record<string, unknown>)[field] as ArrayOperand | undefined;
    if (!operand) continue;
    arrays.push({ name: field, dtype: 'F32', shape: operand.shape, data: operand.data });
    json[field] = { array: field };
  }
  // Arrays first: the json file is the commit point of the op.
  mkdirSync(path.join(dir, 'ops'), { recursive: true });
  if (arrays.length > 0) writeSafetensors(opFile(dir, index, 'safetensors'), arrays);
  writeJsonAtomic(opFile(dir, index, 'json'), json);
}

export function readOps(dir: string, count: number): WriteOp[] {
  const ops: WriteOp[] = [];
  for (let index = 0; index < count; index++) {
    const file = opFile(dir, index, 'json');
    if (!existsSync(file)) throw new Error(`episode log ${dir} says ${count} ops but op ${index} is missing`);
    const json = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const arrayFields = ARRAY_FIELDS.filter((f) => json[f] !== undefined);
    if (arrayFields.length > 0) {
      const st = SafetensorsFile.open(opFile(dir, index, 'safetensors'));
      for (const field of arrayFields) {
        const bytes = st.readBytes(field);
        json[field] = {
          shape: st.info(field).shape,
          data: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4),
        };
      }
      st.close();
    }
    ops.push(json as WriteOp);
  }
  return ops;
}
