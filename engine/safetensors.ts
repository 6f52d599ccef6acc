// Our own safetensors reader and writer (no usable npm package exists).
// Format: u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
// "__metadata__"?: {string: string}}, then the byte buffer; offsets are relative to the end of the header.
// Reads are lazy and positioned: opening a file reads only its header.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../core/files.ts';
import { readFileInto } from './kernels.ts';

/** Tensors from this size up are read on every core (kernels.ts `readFileInto`): a 1B layer's MLP weights, 16 MB. */
const PARALLEL_READ_BYTES = 4 << 20;

export type DType = 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'U8';
export const DTYPE_BYTES: Record<DType, number> = { F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, U8: 1 };

export type TensorInfo = {
  name: string;
  dtype: DType;
  shape: number[];
  /** Absolute byte offset of the tensor's data in the file. */
  offset: number;
  byteLength: number;
  file: string;
};

export class SafetensorsError extends Error {
  constructor(
    readonly file: string,
    message: string,
    readonly tensor?: string,
  ) {
    super(`${path.basename(file)}${tensor ? ` (tensor "${tensor}")` : ''}: ${message}`);
    this.name = 'SafetensorsError';
  }
}

const MAX_HEADER_BYTES = 100 * 1024 * 1024; // the reference implementation's limit

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** An open safetensors file: header parsed and validated, data read on demand. */
export class SafetensorsFile {
  private constructor(
    readonly file: string,
    private readonly fd: number,
    readonly tensors: ReadonlyMap<string, TensorInfo>,
    readonly metadata: Readonly<Record<string, string>>,
  ) {}

  static open(file: string): SafetensorsFile {
    const fd = openSync(file, 'r');
    try {
      const size = fstatSync(fd).size;
      const { tensors, metadata } = readHeader(
        file,
        size,
        (buffer, position) => void readSync(fd, buffer, 0, buffer.length, position),
      );
      return new SafetensorsFile(file, fd, tensors, metadata);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  info(name: string): TensorInfo {
    const info = this.tensors.get(name);
    if (!info) throw new SafetensorsError(this.file, 'no such tensor in this file', name);
    return info;
  }

  /** Raw bytes of one tensor (or a byte range inside it). */
  readBytes(name: string, begin = 0, end?: number, into?: Uint8Array): Uint8Array {
    const info = this.info(name);
    const stop = end ?? info.byteLength;
    if (begin < 0 || stop > info.byteLength || begin > stop) {
      throw new SafetensorsError(
        this.file,
        `byte range [${begin}, ${stop}) outside the tensor's ${info.byteLength} bytes`,
        name,
      );
    }
    // Aligned allocation so that typed views of any element size work (or the caller's buffer, e.g. shared memory).
    const buffer = into ?? new Uint8Array(new ArrayBuffer(Math.ceil((stop - begin) / 8) * 8), 0, stop - begin);
    if (buffer.length !== stop - begin)
      throw new SafetensorsError(
        this.file,
        `a ${buffer.length}-byte buffer cannot take bytes [${begin}, ${stop})`,
        name,
      );
    // A large tensor on every core (kernels.ts); a small one here, so that reading a patch's few small arrays loads
    // no addon.
    let done = 0;
    if (buffer.length >= PARALLEL_READ_BYTES) done = readFileInto(this.fd, info.offset + begin, buffer);
    while (done < buffer.length) {
      const n = readSync(this.fd, buffer, done, buffer.length - done, info.offset + begin + done);
      if (n === 0) throw new SafetensorsError(this.file, 'file ended inside the tensor data (truncated?)', name);
      done += n;
    }
    return buffer;
  }

  /** BF16 tensor as its raw 16-bit patterns. */
  readBf16(name: string): Uint16Array {
    const info = this.info(name);
    if (info.dtype !== 'BF16') throw new SafetensorsError(this.file, `dtype is ${info.dtype}, expected BF16`, name);
    const bytes = this.readBytes(name);
    return new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * A safetensors file held in memory (bytes already read, e.g. to hash them), its header validated exactly as
 * SafetensorsFile.open does; `file` names it in errors. Tensor data: `bytes.subarray(info.offset, …)`.
 */
export function parseSafetensors(
  bytes: Uint8Array,
  file: string,
): { tensors: ReadonlyMap<string, TensorInfo>; metadata: Readonly<Record<string, string>> } {
  return readHeader(file, bytes.length, (buffer, position) =>
    buffer.set(bytes.subarray(position, position + buffer.length)),
  );
}

type Header = { tensors: Map<string, TensorInfo>; metadata: Record<string, string> };

/** Parse and validate the header of a `size`-byte file; `read(buffer, position)` fills `buffer` from the file. */
function readHeader(file: string, size: number, read: (buffer: Buffer, position: number) => void): Header {
  if (size < 8) throw new SafetensorsError(file, `file is ${size} bytes, too short for a header`);
  const lengthBytes = Buffer.alloc(8);
  read(lengthBytes, 0);
  const headerLength = Number(lengthBytes.readBigUInt64LE(0));
  if (headerLength > MAX_HEADER_BYTES)
    throw new SafetensorsError(file, `header length ${headerLength} exceeds ${MAX_HEADER_BYTES}`);
  if (8 + headerLength > size)
    throw new SafetensorsError(
      file,
      `header length ${headerLength} runs past the end of the ${size}-byte file (truncated?)`,
    );
  const headerBytes = Buffer.alloc(headerLength);
  read(headerBytes, 8);
  let header: unknown;
  try {
    header = JSON.parse(headerBytes.toString('utf8'));
  } catch (error) {
    throw new SafetensorsError(file, `header is not valid JSON (${(error as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw new SafetensorsError(file, 'header is not a JSON object');

  const dataStart = 8 + headerLength;
  const dataLength = size - dataStart;
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  const ranges: [number, number, string][] = [];
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      metadata = validateMetadata(file, entry);
      continue;
    }
    const info = validateEntry(file, name, entry, dataStart, dataLength);
    tensors.set(name, info);
    ranges.push([info.offset - dataStart, info.offset - dataStart + info.byteLength, name]);
  }
  // Tensors must not overlap (the reference implementation also requires them to be contiguous; we only refuse overlap).
  ranges.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i]![0] < ranges[i - 1]![1])
      throw new SafetensorsError(file, `data overlaps tensor "${ranges[i - 1]![2]}"`, ranges[i]![2]);
  }
  return { tensors, metadata };
}

function validateMetadata(file: string, entry: unknown): Record<string, string> {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
    throw new SafetensorsError(file, '__metadata__ is not an object');
  for (const [key, value] of Object.entries(entry)) {
    if (typeof value !== 'string') throw new SafetensorsError(file, `__metadata__.${key} is not a string`);
  }
  return entry as Record<string, string>;
}

function validateEntry(file: string, name: string, entry: unknown, dataStart: number, dataLength: number): TensorInfo {
  if (typeof entry !== 'object' || entry === null)
    throw new SafetensorsError(file, 'header entry is not an object', name);
  const { dtype, shape, data_offsets: offsets } = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
  if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES)) {
    throw new SafetensorsError(
      file,
      `unknown dtype ${JSON.stringify(dtype)} (supported: ${Object.keys(DTYPE_BYTES).join(', ')})`,
      name,
    );
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new SafetensorsError(file, `shape ${JSON.stringify(shape)} is not a list of non-negative integers`, name);
  }
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
    offsets[0] > offsets[1]
  ) {
    throw new SafetensorsError(
      file,
      `data_offsets ${JSON.stringify(offsets)} are not [begin, end] with begin ≤ end`,
      name,
    );
  }
  const [begin, end] = offsets as [number, number];
  const expected = numel(shape) * DTYPE_BYTES[dtype as DType];
  if (end - begin !== expected) {
    throw new SafetensorsError(
      file,
      `byte length ${end - begin} does not match shape ${JSON.stringify(shape)} × ${dtype} (${expected} bytes)`,
      name,
    );
  }
  if (end > dataLength) {
    throw new SafetensorsError(
      file,
      `data_offsets end ${end} is outside the ${dataLength}-byte data section (truncated?)`,
      name,
    );
  }
  return {
    name,
    dtype: dtype as DType,
    shape: shape as number[],
    offset: dataStart + begin,
    byteLength: expected,
    file,
  };
}

export type TensorToWrite = { name: string; dtype: DType; shape: number[]; data: Uint8Array | ArrayBufferView };

/**
 * Write a safetensors file atomically (temp file + fsync + rename). Tensors are laid out contiguously in the given
 * order (the format allows no gaps); the header is padded with spaces to a multiple of 8 bytes so the data section
 * starts 8-byte aligned.
 */
export function writeSafetensors(file: string, tensors: TensorToWrite[], metadata?: Record<string, string>): void {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let offset = 0;
  const seen = new Set<string>();
  for (const t of tensors) {
    if (seen.has(t.name)) throw new SafetensorsError(file, 'duplicate tensor name', t.name);
    seen.add(t.name);
    const byteLength = numel(t.shape) * DTYPE_BYTES[t.dtype];
    if (t.data.byteLength !== byteLength) {
      throw new SafetensorsError(
        file,
        `data is ${t.data.byteLength} bytes, shape ${JSON.stringify(t.shape)} × ${t.dtype} needs ${byteLength}`,
        t.name,
      );
    }
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + byteLength] };
    offset += byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + Buffer.byteLength(json)) % 8)) % 8);
  const headerBytes = Buffer.from(json, 'utf8');
  const lengthBytes = Buffer.alloc(8);
  lengthBytes.writeBigUInt64LE(BigInt(headerBytes.length));

  writeFileAtomic(file, [
    lengthBytes,
    headerBytes,
    ...tensors.map((t) => new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength)),
  ]);
}
