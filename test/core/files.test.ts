// core/files.ts: the one atomic writer. A file is written whole from its pieces; a folder appears whole or not at all,
// the old one kept when filling fails; the temp names are the ones the leftover cleaner removes.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  removeAtomicLeftovers,
  SECRET_FILE_MODE,
  writeFileAtomic,
  writeFolderAtomic,
  writeJsonAtomic,
} from '../../core/files.ts';

const tempDir = () => mkdtempSync(path.join(tmpdir(), 'iwibench-core-files-'));

describe('core/files', () => {
  it('writes a file from text, bytes or pieces in order, replacing the old one and leaving no temp file', () => {
    const dir = tempDir();
    const file = path.join(dir, 'sub', 'a.bin');
    writeFileAtomic(file, 'old');
    writeFileAtomic(file, [Buffer.from('ab'), new Uint8Array([99]), new Uint8Array(0), Buffer.from('d')]);
    expect(readFileSync(file, 'utf8')).toBe('abcd');
    writeFileAtomic(file, new Uint8Array([101, 102]), false);
    expect(readFileSync(file, 'utf8')).toBe('ef');
    writeJsonAtomic(path.join(dir, 'v.json'), { a: [1] }, true, SECRET_FILE_MODE);
    expect(readFileSync(path.join(dir, 'v.json'), 'utf8')).toBe('{\n  "a": [\n    1\n  ]\n}\n');
    expect(statSync(path.join(dir, 'v.json')).mode & 0o077).toBe(0);
    expect(readdirSync(dir, { recursive: true }).filter((f) => String(f).includes('.tmp-'))).toEqual([]);
  });

  it('makes a folder whole in one rename, and keeps the old one when filling throws or rejects', async () => {
    const dir = tempDir();
    const out = path.join(dir, 'out');
    expect(writeFolderAtomic(out, (temp) => (writeFileSync(path.join(temp, 'x'), '1'), 'made'))).toBe('made');
    expect(readdirSync(out)).toEqual(['x']);
    expect(() =>
      writeFolderAtomic(out, (temp) => {
        writeFileSync(path.join(temp, 'y'), '2');
        throw new Error('half-way');
      }),
    ).toThrow('half-way');
    await expect(
      writeFolderAtomic(out, async (temp) => {
        writeFileSync(path.join(temp, 'z'), '3');
        throw new Error('async half-way');
      }),
    ).rejects.toThrow('async half-way');
    expect(readdirSync(out)).toEqual(['x']);
    expect(await writeFolderAtomic(out, async (temp) => (writeFileSync(path.join(temp, 'w'), '4'), 7))).toBe(7);
    expect(readdirSync(out)).toEqual(['w']);
    expect(readdirSync(dir)).toEqual(['out']); // no .partial- folder left
  });

  it("removes the temp files of a writer that is gone, not a live one's", () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'ops'));
    const dead = 99_999_999; // above Linux's pid_max: no such process
    const gone = [path.join(dir, `state.json.tmp-${dead}-1`), path.join(dir, 'ops', `0.safetensors.tmp-${dead}`)];
    const live = path.join(dir, `state.json.tmp-${process.ppid}-3`);
    for (const file of [...gone, live, path.join(dir, 'state.json')]) writeFileSync(file, '');
    expect(removeAtomicLeftovers(dir).sort()).toEqual(gone.sort());
    expect(existsSync(live)).toBe(true);
    expect(existsSync(path.join(dir, 'state.json'))).toBe(true);
  });
});
