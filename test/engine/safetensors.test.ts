import { mkdtempSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SafetensorsFile, writeSafetensors } from '../../engine/safetensors.ts';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'iwibench-st-'));
});

/** A file with a hand-written header, to build malformed cases. */
function rawFile(name: string, header: unknown, dataBytes: number): string {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  const file = path.join(dir, name);
  writeFileSync(file, Buffer.concat([length, json, Buffer.alloc(dataBytes)]));
  return file;
}

describe('safetensors', () => {
  it('writes and reads back F32, F16 and BF16 tensors with metadata, lazily', () => {
    const file = path.join(dir, 'ok.safetensors');
    const f32 = Float32Array.from([1.5, -2, 3]);
    const bf16 = Uint16Array.from([0x3f80, 0x4000, 0x4040, 0x4080]);
    writeSafetensors(
      file,
      [
        { name: 'a', dtype: 'F32', shape: [3], data: f32 },
        { name: 'b', dtype: 'BF16', shape: [2, 2], data: bf16 },
        { name: 'c', dtype: 'F16', shape: [1], data: Uint16Array.from([0x3c00]) },
      ],
      { format: 'pt' },
    );
    const st = SafetensorsFile.open(file);
    expect(st.metadata).toEqual({ format: 'pt' });
    expect(st.info('b').shape).toEqual([2, 2]);
    expect(Array.from(new Float32Array(st.readBytes('a').buffer, 0, 3))).toEqual([1.5, -2, 3]);
    expect(Array.from(st.readBf16('b'))).toEqual(Array.from(bf16));
    expect(Array.from(st.readBytes('b', 2, 4))).toEqual([0x00, 0x40]);
    // The data section starts 8-byte aligned, and tensors follow each other with no gap.
    expect(st.info('a').offset % 8).toBe(0);
    expect(st.info('b').offset).toBe(st.info('a').offset + 12);
    expect(st.info('c').offset).toBe(st.info('b').offset + 8);
    st.close();
  });

  it('refuses a truncated file, naming file and tensor', () => {
    const file = path.join(dir, 'trunc.safetensors');
    writeSafetensors(file, [{ name: 'w', dtype: 'F32', shape: [4], data: new Float32Array(4) }]);
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, bytes.length - 3));
    expect(() => SafetensorsFile.open(file)).toThrow(
      /trunc\.safetensors \(tensor "w"\): data_offsets end 16 is outside the 13-byte data section/,
    );
  });

  it('reads a large tensor (on every core where the addon is loaded) as it reads a small one, and its end if cut', () => {
    const file = path.join(dir, 'large.safetensors');
    // 2.5 M BF16 values (5 MB: past the parallel read's threshold, three 2 MiB chunks), after a small tensor so that
    // the large one starts at no chunk boundary.
    const bits = Uint16Array.from({ length: 2_500_001 }, (_, i) => Math.imul(i, 0x9e3779b1) >>> 16);
    writeSafetensors(file, [
      { name: 'small', dtype: 'BF16', shape: [3], data: Uint16Array.from([1, 2, 3]) },
      { name: 'large', dtype: 'BF16', shape: [2_500_001], data: bits },
    ]);
    const st = SafetensorsFile.open(file);
    const bytesOf = (a: Uint16Array | Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    expect(bytesOf(st.readBf16('large')).equals(bytesOf(bits))).toBe(true);
    const middle = st.readBytes('large', 1_000_001, 4_900_001);
    expect(bytesOf(middle).equals(Buffer.from(bits.buffer, 1_000_001, 3_900_000))).toBe(true);
    // Cut after it was opened: the read stops at the file's end and says so.
    truncateSync(file, st.info('large').offset + 4_000_000);
    expect(() => st.readBytes('large')).toThrow(
      /large\.safetensors \(tensor "large"\): file ended inside the tensor data/,
    );
    st.close();
  });

  it('refuses a header longer than the file', () => {
    const file = path.join(dir, 'short.safetensors');
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(1000n);
    writeFileSync(file, Buffer.concat([length, Buffer.from('{}')]));
    expect(() => SafetensorsFile.open(file)).toThrow(/header length 1000 runs past the end/);
    writeFileSync(file, Buffer.from([1, 2, 3]));
    expect(() => SafetensorsFile.open(file)).toThrow(/too short for a header/);
  });

  it('refuses offsets outside the data, shape/byte-length mismatches, unknown dtypes, overlaps and bad JSON', () => {
    expect(() =>
      SafetensorsFile.open(
        rawFile('outside.safetensors', { w: { dtype: 'F32', shape: [2], data_offsets: [8, 16] } }, 8),
      ),
    ).toThrow(/outside\.safetensors \(tensor "w"\): data_offsets end 16 is outside the 8-byte data section/);
    expect(() =>
      SafetensorsFile.open(rawFile('shape.safetensors', { w: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, 8)),
    ).toThrow(/\(tensor "w"\): byte length 8 does not match shape \[3\] × F32 \(12 bytes\)/);
    expect(() =>
      SafetensorsFile.open(rawFile('dtype.safetensors', { w: { dtype: 'Q4', shape: [2], data_offsets: [0, 8] } }, 8)),
    ).toThrow(/\(tensor "w"\): unknown dtype "Q4"/);
    expect(() =>
      SafetensorsFile.open(
        rawFile(
          'overlap.safetensors',
          {
            a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] },
            b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] },
          },
          12,
        ),
      ),
    ).toThrow(/overlaps tensor "a"/);
    const file = path.join(dir, 'json.safetensors');
    const length = Buffer.alloc(8);
    length.writeBigUInt64LE(5n);
    writeFileSync(file, Buffer.concat([length, Buffer.from('{oops')]));
    expect(() => SafetensorsFile.open(file)).toThrow(/json\.safetensors: header is not valid JSON/);
  });

  it('names the missing tensor and refuses reads outside a tensor', () => {
    const file = path.join(dir, 'range.safetensors');
    writeSafetensors(file, [{ name: 'w', dtype: 'BF16', shape: [2], data: new Uint16Array(2) }]);
    const st = SafetensorsFile.open(file);
    expect(() => st.info('nope')).toThrow(/\(tensor "nope"\): no such tensor/);
    expect(() => st.readBytes('w', 0, 6)).toThrow(/byte range \[0, 6\) outside the tensor's 4 bytes/);
    expect(() => st.readBf16('w')).not.toThrow();
    st.close();
  });

  it('refuses to write data that does not match its shape', () => {
    expect(() =>
      writeSafetensors(path.join(dir, 'bad.safetensors'), [
        { name: 'w', dtype: 'F32', shape: [3], data: new Float32Array(2) },
      ]),
    ).toThrow(/data is 8 bytes, shape \[3\] × F32 needs 12/);
  });
});
