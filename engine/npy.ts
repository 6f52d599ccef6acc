// NumPy .npy (format 1.0) writer for float32 arrays, so other implementations can compare our logits exactly.
import { writeFileAtomic } from '../core/files.ts';

export function npyBytes(data: Float32Array, shape: number[]): Buffer {
  const header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  // Magic (6) + version (2) + header length (2) + header, padded with spaces and ending in \n to a multiple of 64.
  const unpadded = 10 + header.length + 1;
  const padded = header + ' '.repeat((64 - (unpadded % 64)) % 64) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix[7] = 0;
  prefix.writeUInt16LE(padded.length, 8);
  return Buffer.concat([
    prefix,
    Buffer.from(padded, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  ]);
}

export function writeNpy(file: string, data: Float32Array, shape: number[]): void {
  writeFileAtomic(file, npyBytes(data, shape));
}

/** Parse a float32 C-order .npy (used by tests and cross-checks). */
export function readNpy(bytes: Buffer): { data: Float32Array; shape: number[] } {
  if (bytes.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error('not a .npy file');
  const headerLength = bytes[6] === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = bytes[6] === 1 ? 10 : 12;
  const header = bytes.toString('latin1', start, start + headerLength);
  if (!header.includes("'descr': '<f4'") || header.includes("'fortran_order': True"))
    throw new Error(`unsupported .npy header ${header.trim()}`);
  const shape = /'shape': \(([^)]*)\)/
    .exec(header)![1]!
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  const body = bytes.subarray(start + headerLength);
  const data = new Float32Array(body.length / 4);
  new Uint8Array(data.buffer).set(body);
  return { data, shape };
}
