// The BF16 kernels: the native addon and the JavaScript fallback against a double-precision reference, exact widening,
// bitwise determinism (batch vs alone, thread counts, addon vs fallback) and argument checks.
import { execFile } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bf16Value, f32ToBf16, f32ToBf16Bits } from '../../engine/bf16.ts';
import {
  adviseHugePages,
  argmax,
  argmaxRows,
  fmaF32,
  ISAS,
  jsKernels,
  kernelInfo,
  matmulBf16,
  matmulBf16Parts,
  nativeKernels,
  readBandwidth,
  readFileInto,
  roundBf16,
  selectKernels,
  setKernelThreads,
  widenBf16,
  peakRate,
  type KernelImpl,
} from '../../engine/kernels.ts';
import { seededRandom } from '../fixtures.ts';

const exec = promisify(execFile);
const nativeOff = process.env.IWIBENCH_NATIVE === '0';

/** x [m×k] float32 and W [n×k] BF16 with magnitudes over a few decades, as activations and weights have. */
function operands(m: number, n: number, k: number, seed: number): { x: Float32Array; w: Uint16Array } {
  const random = seededRandom(seed);
  const value = () => (random() - 0.5) * 2 ** Math.floor(random() * 12 - 6);
  return { x: Float32Array.from({ length: m * k }, value), w: f32ToBf16(Float64Array.from({ length: n * k }, value)) };
}

function run(impl: KernelImpl, x: Float32Array, w: Uint16Array, m: number, n: number, k: number): Float32Array {
  const out = new Float32Array(m * n).fill(NaN);
  matmulBf16(x, w, out, m, n, k, impl);
  return out;
}

/**
 * Throws unless every out[r, j] is within tolerance · Σ|x·w| of the double-precision Σ x·w over i (rows of x [m×k]
 * against rows of BF16 W [n×k]); `label` names the case in the message.
 */
function expectNearReference(
  label: string,
  out: Float32Array,
  { x, w }: { x: Float32Array; w: Uint16Array },
  [m, n, k]: [number, number, number],
  tolerance: number,
): void {
  for (let r = 0; r < m; r++) {
    for (let j = 0; j < n; j++) {
      let sum = 0;
      let magnitude = 0;
      for (let i = 0; i < k; i++) {
        const product = x[r * k + i]! * bf16Value(w[j * k + i]!);
        sum += product;
        magnitude += Math.abs(product);
      }
      const error = Math.abs(out[r * n + j]! - sum);
      if (!(error <= tolerance * magnitude))
        throw new Error(`${label} [${r}, ${j}]: ${out[r * n + j]} vs ${sum} (Σ|x·w| ${magnitude})`);
    }
  }
}

function bits(values: Float32Array): Uint32Array {
  return new Uint32Array(values.buffer, values.byteOffset, values.length);
}

/** Indices where out's bits are not those of BF16 `w` widened (expect's deep equality is slow on a million elements). */
function widenMismatches(w: Uint16Array, out: Float32Array): number[] {
  const got = bits(out);
  const wrong: number[] = [];
  for (let i = 0; i < w.length; i++) if (got[i] !== (w[i]! << 16) >>> 0) wrong.push(i);
  return wrong;
}

const native = (): KernelImpl => {
  const addon = nativeKernels();
  if (!addon)
    throw new Error(
      `the native addon is not loaded (${kernelInfo().reason}); npm ci builds it, IWIBENCH_NATIVE=0 tests the fallback alone`,
    );
  return addon;
};
const implementations: [string, () => KernelImpl][] = [
  ['native', native],
  ['fallback', () => jsKernels],
];

afterAll(() => setKernelThreads(os.availableParallelism()));

it('loads the native addon unless IWIBENCH_NATIVE=0 (a broken build must not hide behind the fallback)', () => {
  const info = kernelInfo();
  if (nativeOff) {
    expect(info).toMatchObject({ native: false, reason: 'IWIBENCH_NATIVE=0', threads: 1, isa: 'javascript' });
  } else {
    expect(info.native, info.reason).toBe(true);
    expect(info.threads).toBeGreaterThanOrEqual(1);
    // Every path is compiled; the widest this CPU runs is in force (AVX-512 needs F, DQ, BW and VL; AMX joins only
    // where its probe gives the arithmetic's bits, and says why not otherwise).
    if (existsSync('/proc/cpuinfo') && process.arch === 'x64') {
      const flags = new Set(/^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))![1]!.trim().split(/\s+/));
      const has = (...names: string[]) => names.every((name) => flags.has(name));
      const vectors = has('avx512f', 'avx512dq', 'avx512bw', 'avx512vl')
        ? 'avx512'
        : has('avx2', 'fma')
          ? 'avx2'
          : 'portable';
      expect(info.available).toEqual(ISAS.slice(0, ISAS.indexOf(vectors) + (info.amx === 'used' ? 2 : 1)));
      expect(info.isa).toBe(info.amx === 'used' ? 'amx' : vectors);
      if (!has('amx_tile', 'amx_bf16')) expect(info.amx).toBe('the CPU has no AMX-BF16');
    }
  }
});

describe.skipIf(nativeOff)('readFileInto on the pool', () => {
  // 9 MiB and 123 bytes: five chunks of 2 MiB, the last one short.
  const bytes = Uint8Array.from({ length: 9 * 2 ** 20 + 123 }, (_, i) => Math.imul(i + 7, 0x9e3779b1) >>> 24);
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'iwibench-read-')), 'bytes');
  writeFileSync(file, bytes);

  it('reads any range, on 1 to 3 threads, as readSync does; at the end of the file, what is there', () => {
    const fd = openSync(file, 'r');
    try {
      for (const threads of [1, 2, 3]) {
        setKernelThreads(threads);
        for (const [position, length] of [
          [0, bytes.length],
          [1001, 5 * 2 ** 20 + 17],
          [bytes.length - 10, 10],
        ] as const) {
          const into = new Uint8Array(length);
          expect(readFileInto(fd, position, into)).toBe(length);
          expect(Buffer.from(into).equals(bytes.subarray(position, position + length))).toBe(true);
        }
        const past = new Uint8Array(3 * 2 ** 20).fill(0xaa);
        expect(readFileInto(fd, bytes.length - 2 ** 20 - 5, past)).toBe(2 ** 20 + 5);
        expect(Buffer.from(past.subarray(0, 2 ** 20 + 5)).equals(bytes.subarray(bytes.length - 2 ** 20 - 5))).toBe(
          true,
        );
        expect(readFileInto(fd, bytes.length + 100, new Uint8Array(8))).toBe(0);
        expect(readFileInto(fd, 0, new Uint8Array(0))).toBe(0);
      }
    } finally {
      setKernelThreads(os.availableParallelism());
      closeSync(fd);
    }
  });

  it('refuses bad arguments and says what the OS said of a bad descriptor, writing nothing', () => {
    const into = new Uint8Array(4 * 2 ** 20).fill(7);
    const fd = openSync(file, 'r');
    closeSync(fd);
    expect(() => readFileInto(fd, 0, into)).toThrow(/^readFileInto: Bad file descriptor$/);
    expect(into.every((b) => b === 7)).toBe(true);
    expect(() => readFileInto(-1, 0, into)).toThrow(TypeError);
    expect(() => readFileInto(3, -1, into)).toThrow(RangeError);
    expect(() => readFileInto(3, 0.5, into)).toThrow(RangeError);
    expect(() => readFileInto(3, 0, new Uint16Array(4) as unknown as Uint8Array)).toThrow(TypeError);
  });
});

it('falls back with a one-line notice when the addon is missing', () => {
  const missing = path.join(os.tmpdir(), 'no-such-dir', 'iwibench_kernels.node');
  const selection = selectKernels({}, missing);
  expect(selection.impl).toBe(jsKernels);
  expect(selection.addon).toBeUndefined();
  expect(selection.notice).toMatch(
    /^iwibench: native BF16 kernel not available \(.*iwibench_kernels\.node is missing\); using the JavaScript fallback/,
  );
  expect(selection.notice).not.toContain('\n');
  expect(selectKernels({ IWIBENCH_NATIVE: '0' }, missing)).toEqual({ impl: jsKernels, reason: 'IWIBENCH_NATIVE=0' });
});

describe.each(implementations)('%s kernels', (name, impl) => {
  describe.skipIf(name === 'native' && nativeOff)('', () => {
    const shapes: [number, number, number][] = [];
    for (const m of [1, 2, 3, 4, 5, 6, 7, 8, 37])
      for (const n of [1, 13, 50]) for (const k of [7, 33, 1153]) shapes.push([m, n, k]);

    it('matmulBf16 matches a double-precision reference (m = 1…8 and 37, remainders in n and k)', () => {
      for (const [m, n, k] of shapes) {
        // Each product passes through at most k/8 lane additions, 3 reduction additions and 7 tail additions, each
        // rounding by at most 2^-24 relative: the classic bound for recursive summation, relative to Σ|x·w|.
        const tolerance = (Math.ceil(k / 8) + 10) * 2 ** -24;
        const { x, w } = operands(m, n, k, m * 10_000 + n * 100 + k);
        const out = run(impl(), x, w, m, n, k);
        expectNearReference(`${name} m=${m} n=${n} k=${k}`, out, { x, w }, [m, n, k], tolerance);
      }
    });

    it('gives each row of a batch bitwise the value of that row alone', () => {
      for (const [m, n, k] of [
        [8, 50, 1153],
        [37, 13, 33],
        [5, 29, 7],
      ] as const) {
        const { x, w } = operands(m, n, k, 7 + m);
        const batch = run(impl(), x, w, m, n, k);
        for (let r = 0; r < m; r++) {
          const alone = run(impl(), x.slice(r * k, (r + 1) * k), w, 1, n, k);
          expect(bits(batch.subarray(r * n, (r + 1) * n))).toEqual(bits(alone));
        }
      }
    });

    it('matmulBf16Parts gives each weight bitwise what a call of its own gives', () => {
      // Parts of unequal widths whose groups straddle each other (k = 1153: 24-row groups), and a 1-row part.
      for (const m of [1, 3, 8]) {
        const k = 1153;
        const widths = [50, 13, 1, 29];
        const { x } = operands(m, 1, k, 40 + m);
        const ws = widths.map((n, p) => operands(1, n, k, 50 + p).w);
        const outs = widths.map((n) => new Float32Array(m * n).fill(NaN));
        matmulBf16Parts(x, ws, outs, m, k, impl());
        outs.forEach((out, p) => expect(bits(out)).toEqual(bits(run(impl(), x, ws[p]!, m, widths[p]!, k))));
      }
    });

    it('widenBf16 is exact on all 65,536 bit patterns (NaN payloads kept) and on a long multi-part array', () => {
      const all = Uint16Array.from({ length: 65_536 }, (_, i) => i);
      const out = new Float32Array(all.length);
      widenBf16(all, out, impl());
      expect(widenMismatches(all, out)).toEqual([]);
      expect(
        Number.isNaN(out[0x7fc0]) &&
          Number.isNaN(out[0xff81]) &&
          out[0x7f80] === Infinity &&
          Object.is(out[0x8000], -0),
      ).toBe(true);
      const random = seededRandom(3);
      const long = Uint16Array.from({ length: (1 << 20) + 3 }, () => Math.floor(random() * 65_536));
      const wide = new Float32Array(long.length);
      widenBf16(long, wide, impl());
      expect(widenMismatches(long, wide)).toEqual([]);
    });

    it('readBandwidth measures GB/s over a typed array, an ArrayBuffer or a DataView', () => {
      const buffer = new Float32Array(1 << 20).fill(1);
      // In GB/s: above what even the JavaScript loop reads (a rate in MB/s or bytes/s would fail) and below any
      // machine's memory (one in bytes per ns times 1000 would fail).
      const plausible = (rate: number) => expect(rate > 0.05 && rate < 5_000, `${rate} GB/s`).toBe(true);
      plausible(readBandwidth(buffer, 2, impl()));
      plausible(readBandwidth(buffer.buffer, 1, impl()));
      plausible(readBandwidth(new DataView(buffer.buffer, 3), 1, impl()));
    });

    it('rejects bad arguments with a clear error and writes nothing', () => {
      const { x, w } = operands(2, 3, 5, 1);
      const out = new Float32Array(6).fill(42);
      const call =
        (...args: unknown[]) =>
        () =>
          (matmulBf16 as (...a: unknown[]) => void)(...args, impl());
      expect(call(Array.from(x), w, out, 2, 3, 5)).toThrow(new TypeError('matmulBf16: x must be a Float32Array'));
      expect(call(x, new Float32Array(15), out, 2, 3, 5)).toThrow(TypeError);
      expect(call(x, w, new Float64Array(6), 2, 3, 5)).toThrow(TypeError);
      expect(call(x, w, out, 2, 3, 4)).toThrow(/x.length 10 ≠ m·k = 2·4/);
      expect(call(x, w, out, 3, 3, 5)).toThrow(RangeError);
      expect(call(x, w, out.subarray(1), 2, 3, 5)).toThrow(/out.length 5 ≠ m·n/);
      expect(call(x, w, out, 2.5, 3, 5)).toThrow(/m must be an integer/);
      expect(call(x, w, out, 0, 3, 5)).toThrow(RangeError);
      expect(call(x, w, new Float32Array(x.buffer, 0, 6), 2, 3, 5)).toThrow(/must not share memory/);
      expect(Array.from(out)).toEqual(Array(6).fill(42));
      const parts =
        (...args: unknown[]) =>
        () =>
          (matmulBf16Parts as (...a: unknown[]) => void)(...args, impl());
      const other = new Float32Array(6).fill(42);
      expect(parts(x, [w, w], [out], 2, 5)).toThrow(/same length/);
      expect(parts(x, [], [], 2, 5)).toThrow(/at least 1/);
      expect(parts(x, [w, w.subarray(1)], [out, other], 2, 5)).toThrow(/w.length 14 is not n·k/);
      expect(parts(x, [w, w], [out, out], 2, 5)).toThrow(/outs must not share memory/);
      expect(parts(x, [w, w], [out, other.subarray(2)], 2, 5)).toThrow(/out.length 4 ≠ m·n/);
      expect(Array.from(other)).toEqual(Array(6).fill(42));
      expect(() => widenBf16(w, new Float32Array(w.length + 1), impl())).toThrow(RangeError);
      expect(() => readBandwidth(new Uint8Array(1024), 1, impl())).toThrow(/at least 1 MiB/);
      expect(() => readBandwidth(new Uint8Array(1 << 20), 0, impl())).toThrow(/repeats/);
    });
  });
});

describe.skipIf(nativeOff)('native addon', () => {
  it('equals the fallback bit for bit (both follow one summation order with fused multiply-adds)', () => {
    for (const [m, n, k] of [
      [1, 50, 1153],
      [8, 13, 33],
      [37, 7, 7],
      [3, 301, 2048],
      // k > 2048: 12-row groups; n = 611: 51 groups, taken in runs of 3 by two threads
      [1, 611, 2561],
      [5, 611, 2561],
    ] as const) {
      const { x, w } = operands(m, n, k, 100 + k);
      expect(bits(run(native(), x, w, m, n, k))).toEqual(bits(run(jsKernels, x, w, m, n, k)));
    }
  });

  it('equals the fallback bit for bit on several parts at once, groups taken across the parts by two threads', () => {
    const [m, k] = [5, 2561];
    const widths = [611, 37, 256];
    const { x } = operands(m, 1, k, 7);
    const ws = widths.map((n, p) => operands(1, n, k, 70 + p).w);
    const outs = (impl: KernelImpl) => {
      const result = widths.map((n) => new Float32Array(m * n));
      matmulBf16Parts(x, ws, result, m, k, impl);
      return result.map(bits);
    };
    expect(outs(native())).toEqual(outs(jsKernels));
  });

  it('equals the fallback on infinities, NaN, subnormals and signed zeros (any NaN for NaN)', () => {
    const specials = [Infinity, -Infinity, NaN, 2 ** -140, -(2 ** -149), 2 ** -126, -0, 0, 3e38, -3e38, 1, -1];
    const random = seededRandom(11);
    // Mostly values whose products are subnormal; a few specials, so some outputs are finite and some not.
    const pick = () =>
      random() < 0.03 ? specials[Math.floor(random() * specials.length)]! : (random() - 0.5) * 2 ** -70;
    const [m, n, k] = [3, 17, 41];
    const x = Float32Array.from({ length: m * k }, pick);
    const w = f32ToBf16(Float64Array.from({ length: n * k }, pick));
    const a = run(native(), x, w, m, n, k);
    const b = run(jsKernels, x, w, m, n, k);
    expect(Array.from(a).filter((v) => !Number.isFinite(v)).length).toBeGreaterThan(0);
    expect(Array.from(a).filter((v) => v !== 0 && Math.abs(v) < 2 ** -126).length).toBeGreaterThan(0);
    expect(Array.from(a, (v, i) => Object.is(v, b[i]) || (Number.isNaN(v) && Number.isNaN(b[i])))).toEqual(
      Array(m * n).fill(true),
    );
  });

  it('rounds a·b + c once, as the fallback does, also where rounding twice would differ', () => {
    // a·b + c lands exactly halfway between two float32 values once rounded to a double; the exact value does not.
    const cases = [
      { a: 5237765 * 2 ** -23, b: 205 * 2 ** -7, c: 2 ** 24, fused: 2 ** 24 + 2 },
      { a: 4648233 * 2 ** -23, b: 231 * 2 ** -7, c: 2 ** 24 + 2, fused: 2 ** 24 + 2 },
      { a: -5237765 * 2 ** -23, b: 205 * 2 ** -7, c: -(2 ** 24), fused: -(2 ** 24 + 2) },
    ];
    for (const { a, b, c, fused } of cases) {
      expect(Math.fround(a * b + c)).not.toBe(fused); // the naive emulation would be wrong here
      expect(fmaF32(a, b, c)).toBe(fused);
      // k = 9: lane 0 holds c·1, the tail adds a·b: out = fma(a, b, c).
      const x = Float32Array.from([c, 0, 0, 0, 0, 0, 0, 0, a]);
      const w = f32ToBf16([1, 0, 0, 0, 0, 0, 0, 0, b]);
      expect(run(native(), x, w, 1, 1, 9)[0]).toBe(fused);
      expect(run(jsKernels, x, w, 1, 1, 9)[0]).toBe(fused);
    }
  });

  it('gives the same bits with 1, 2, 3 and 7 threads, call after call', () => {
    const [m, n, k] = [8, 301, 1153];
    const { x, w } = operands(m, n, k, 5);
    const results = [1, 2, 3, 7].map((threads) => {
      setKernelThreads(threads);
      expect(kernelInfo().threads).toBe(threads);
      return bits(run(native(), x, w, m, n, k));
    });
    for (const result of results.slice(1)) expect(result).toEqual(results[0]);
    // Back-to-back calls with more threads than cores: late workers join or stay out, the bits never change.
    setKernelThreads(7);
    const one = bits(run(native(), x.subarray(0, k), w, 1, n, k));
    let differing = 0;
    for (let call = 0; call < 300; call++)
      if (bits(run(native(), x.subarray(0, k), w, 1, n, k)).some((b, j) => b !== one[j])) differing++;
    expect(differing).toBe(0);
    expect(one).toEqual(results[0]!.subarray(0, n));
    expect(() => setKernelThreads(0)).toThrow(RangeError);
  });

  it('equals the fallback bit for bit on many rows, its parts and every row alone, with 1, 2, 3 threads', () => {
    // Register tiles of 4 or 2 rows against panels of 256 k: the shapes leave remainders in all of these (n = 77, not
    // a multiple of 16 or 32; m = 41, 47; k = 300 and 1300, more than one panel and not whole blocks of 32; k = 7, a
    // block of padding mostly).
    const widths = [77, 32, 5, 64];
    for (const [m, k] of [
      [9, 300],
      [17, 136],
      [33, 300],
      [40, 1300],
      [41, 300],
      [47, 136],
      [64, 300],
      [100, 7],
      [130, 20],
    ] as const) {
      const { x } = operands(m, 1, k, 900 + m);
      const ws = widths.map((n, p) => operands(1, n, k, 910 + p + k).w);
      const outs = (impl: KernelImpl) => {
        const result = widths.map((n) => new Float32Array(m * n).fill(NaN));
        matmulBf16Parts(x, ws, result, m, k, impl);
        return result.map(bits);
      };
      const expected = outs(jsKernels);
      for (const threads of [1, 2, 3]) {
        setKernelThreads(threads);
        expect(outs(native()), `m=${m} k=${k} threads=${threads}`).toEqual(expected);
      }
      // Each row alone (m = 1: the few-rows path) gives that row's bits in the batch.
      for (const r of [0, Math.floor(m / 2), m - 1]) {
        const alone = widths.map((n) => new Float32Array(n));
        matmulBf16Parts(x.subarray(r * k, (r + 1) * k), ws, alone, 1, k, native());
        alone.forEach((out, p) =>
          expect(bits(out)).toEqual(expected[p]!.subarray(r * widths[p]!, (r + 1) * widths[p]!)),
        );
      }
    }
    setKernelThreads(os.availableParallelism());
  });

  it('checks its arguments itself, below the TypeScript wrapper', () => {
    const addon = native();
    const out = new Float32Array(4).fill(7);
    const call = (x: Float32Array, ws: Uint16Array[], outs: Float32Array[], m: number, k: number) =>
      addon.products(x, ws, outs, m, k, false, false);
    expect(() => call(new Float32Array(4), [new Uint16Array(4)], [out], 2, 3)).toThrow(/x.length must be m·k/);
    expect(() => call(new Float32Array(6), [new Uint16Array(6)], [out], 2, 1e10)).toThrow(RangeError);
    expect(() => call(new Float32Array(6), [new Int16Array(6) as unknown as Uint16Array], [out], 2, 3)).toThrow(
      TypeError,
    );
    expect(() => call(new Float32Array(6), [new Uint16Array(6)], [], 2, 3)).toThrow(/same length/);
    expect(() => call(new Float32Array(6), [new Uint16Array(6), new Uint16Array(6)], [out, out], 2, 3)).toThrow(
      /share memory/,
    );
    expect(() =>
      addon.products(new Float32Array(6), [new Uint16Array(6)], [out], 2, 3, 'yes' as unknown as boolean, false),
    ).toThrow(/booleans/);
    expect(() => addon.widenBf16(new Uint16Array(5), out)).toThrow(RangeError);
    expect(Array.from(out)).toEqual([7, 7, 7, 7]);
  });

  it('advises huge pages over the whole 2 MiB blocks of a buffer (Linux), values untouched', () => {
    const MiB = 2 ** 20;
    const view = new Uint16Array(new SharedArrayBuffer(9 * MiB));
    const advised = adviseHugePages(view);
    const thp = process.platform === 'linux' && existsSync('/sys/kernel/mm/transparent_hugepage/enabled');
    if (thp) {
      // 9 MiB from any address hold at least 3 whole aligned 2 MiB blocks, and at most 4.
      expect(advised % (2 * MiB)).toBe(0);
      expect(advised).toBeGreaterThanOrEqual(6 * MiB);
      expect(advised).toBeLessThanOrEqual(8 * MiB);
    } else expect(advised).toBe(0);
    expect(view.every((v) => v === 0)).toBe(true);
    view.fill(0x3f80);
    expect(view[view.length - 1]).toBe(0x3f80);
    expect(adviseHugePages(new Float32Array(16))).toBe(0); // no whole block inside
    expect(() => adviseHugePages(new DataView(new ArrayBuffer(8)))).toThrow(TypeError);
  });

  it('is replaced by the fallback in a process started with IWIBENCH_NATIVE=0, with the same results', async () => {
    const script = [
      "import { kernelInfo, matmulBf16 } from './engine/kernels.ts';",
      "import { f32ToBf16 } from './engine/bf16.ts';",
      'const x = Float32Array.from({ length: 3 * 77 }, (_, i) => Math.sin(i));',
      'const w = f32ToBf16(Float32Array.from({ length: 5 * 77 }, (_, i) => Math.cos(i * 0.3)));',
      'const out = new Float32Array(15); matmulBf16(x, w, out, 3, 5, 77);',
      'console.log(JSON.stringify({ info: kernelInfo(), bits: Array.from(new Uint32Array(out.buffer)) }));',
    ].join('\n');
    const root = path.resolve(import.meta.dirname, '../..');
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      env: { ...process.env, IWIBENCH_NATIVE: '0' },
    });
    const child = JSON.parse(stdout) as { info: unknown; bits: number[] };
    expect(child.info).toMatchObject({ native: false, reason: 'IWIBENCH_NATIVE=0', threads: 1, isa: 'javascript' });
    expect(stderr).not.toContain('iwibench: native'); // turned off on purpose: no notice
    const x = Float32Array.from({ length: 3 * 77 }, (_, i) => Math.sin(i));
    const w = f32ToBf16(Float32Array.from({ length: 5 * 77 }, (_, i) => Math.cos(i * 0.3)));
    expect(child.bits).toEqual(Array.from(bits(run(native(), x, w, 3, 5, 77))));
  });
});

describe('roundBf16', () => {
  const cases = Float32Array.from([
    0,
    -0,
    1,
    -1,
    1 + 2 ** -8,
    1 + 2 ** -7,
    1 + 3 * 2 ** -8,
    1 + 2 ** -8 + 2 ** -20,
    3.4028234663852886e38,
    -3.4e38,
    Infinity,
    -Infinity,
    NaN,
    1e-40,
    -1e-45,
    65504.7,
    Math.PI,
  ]);
  const expected = Uint32Array.from(cases, (v) => f32ToBf16Bits(v) << 16);

  it('rounds to the nearest BF16, ties to even, past the largest to ±∞, NaN kept NaN: addon and fallback alike', () => {
    // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: to even (1); 1 + 3·2^-8 to 1 + 2^-6; a hair above a tie rounds up.
    expect(bf16Value(f32ToBf16Bits(1 + 2 ** -8))).toBe(1);
    expect(bf16Value(f32ToBf16Bits(1 + 3 * 2 ** -8))).toBe(1 + 2 ** -6);
    expect(bf16Value(f32ToBf16Bits(1 + 2 ** -8 + 2 ** -20))).toBe(1 + 2 ** -7);
    expect(bf16Value(f32ToBf16Bits(3.4028234663852886e38))).toBe(Infinity);
    for (const impl of [jsKernels, ...(nativeKernels() ? [nativeKernels()!] : [])]) {
      const x = cases.slice();
      roundBf16(x, impl);
      expect(Number.isNaN(x[12])).toBe(true);
      expect(Array.from(bits(x))).toEqual(Array.from(expected));
    }
    const random = Float32Array.from({ length: 100_003 }, seededRandom(5)).map((v) => (v - 0.5) * 1e3);
    const [a, b] = [random.slice(), random.slice()];
    roundBf16(a, jsKernels);
    roundBf16(b);
    expect(bits(b)).toEqual(bits(a));
    expect(Array.from(bits(a)).every((v) => (v & 0xffff) === 0)).toBe(true);
  });

  it('takes a Float32Array only', () => {
    expect(() => roundBf16(new Float64Array(2) as unknown as Float32Array)).toThrow(
      /roundBf16: x must be a Float32Array/,
    );
    expect(() => (nativeKernels() as KernelImpl).roundBf16([] as unknown as Float32Array)).toThrow(/Float32Array/);
  });
});

describe('argmaxRows (the greedy choice of each row)', () => {
  const impls: [string, KernelImpl][] = [
    ['fallback', jsKernels],
    ...(nativeOff ? [] : [['addon', nativeKernels()!] as [string, KernelImpl]]),
  ];
  const choose = (values: Float32Array, n: number, impl: KernelImpl) => {
    const out = new Int32Array(values.length / n).fill(-7);
    argmaxRows(values, n, out, impl);
    return Array.from(out);
  };

  it.each(impls)('%s: the first index of the largest value; NaN never chosen; 0 when nothing exceeds −∞', (_, impl) => {
    const row = (n: number, set: Record<number, number>) => {
      const v = new Float32Array(n).fill(-1);
      for (const [i, value] of Object.entries(set)) v[Number(i)] = value;
      return v;
    };
    const rows: [Float32Array, number][] = [
      [row(40, { 3: 5, 20: 5, 33: 5 }), 3], // ties: the first, across lanes and vectors
      [row(40, { 17: 5, 1: 5 }), 1], // the tie's first is in a later lane of an earlier vector
      [row(40, { 0: NaN, 5: 2, 21: NaN }), 5],
      [new Float32Array(37).fill(NaN), 0],
      [new Float32Array(37).fill(-Infinity), 0],
      [row(37, { 36: 9 }), 36], // the scalar tail past the 16-float vectors
      [row(7, { 6: 9, 2: 9 }), 2], // shorter than a vector
      [Float32Array.from({ length: 33 }, (_, i) => (i === 4 ? -0 : i === 30 ? 0 : -1)), 4], // -0 and +0 are equal
      [row(48, { 47: Infinity, 0: 3.4e38 }), 47],
    ];
    for (const [values, want] of rows) {
      expect(choose(values, values.length, impl)).toEqual([want]);
      expect(argmax(values, 0, values.length)).toBe(want);
    }
  });

  it('addon and fallback agree on many rows of random logits with repeated values, with 1 and 2 threads', () => {
    const [R, n] = [23, 1000 + 13];
    const random = seededRandom(17);
    // Few distinct values, so that every row has ties for its largest.
    const values = Float32Array.from({ length: R * n }, () => Math.floor(random() * 50) / 7);
    const want = choose(values, n, jsKernels);
    expect(want).toEqual(Array.from({ length: R }, (_, r) => argmax(values, r * n, n)));
    if (nativeOff) return;
    try {
      for (const threads of [1, 2]) {
        setKernelThreads(threads);
        expect(choose(values, n, nativeKernels()!)).toEqual(want);
      }
    } finally {
      setKernelThreads(os.availableParallelism());
    }
  });

  it('rejects bad arguments with a clear error and writes nothing, in the wrapper and in the addon', () => {
    const out = new Int32Array(2).fill(-7);
    expect(() => argmaxRows(new Float32Array(5), 2, out)).toThrow(/argmaxRows: values must hold out.length ≥ 1 rows/);
    expect(() => argmaxRows(new Float32Array(4), 0, new Int32Array(0))).toThrow(RangeError);
    expect(() => argmaxRows(new Float64Array(4) as unknown as Float32Array, 2, out)).toThrow(/Float32Array/);
    const shared = new Float32Array(4);
    expect(() => argmaxRows(shared, 2, new Int32Array(shared.buffer, 0, 2))).toThrow(/share memory/);
    if (!nativeOff) {
      const addon = nativeKernels()!;
      expect(() => addon.argmaxRows(new Float32Array(5), 2, out)).toThrow(/argmaxRows: values must hold/);
      expect(() => addon.argmaxRows(new Float32Array(4), 2, new Uint32Array(2) as unknown as Int32Array)).toThrow(
        /Int32Array/,
      );
      expect(() => addon.argmaxRows(shared, 2, new Int32Array(shared.buffer, 0, 2))).toThrow(/share memory/);
    }
    expect(Array.from(out)).toEqual([-7, -7]);
  });
});

describe.skipIf(nativeOff)('peakRate (the ceiling of each product path)', () => {
  it('measures each instruction kind in plausible GFLOP/s, and 0 for AMX where it is not in force', () => {
    const info = kernelInfo();
    const fma = peakRate('fma')!;
    // Two threads of float32 FMAs: above a slow core's scalar rate, below any CPU's vector peak.
    if (info.isa !== 'portable') expect(fma).toBeGreaterThan(5);
    expect(fma).toBeLessThan(20_000);
    expect(peakRate('amx', 20_000)! > 0).toBe(info.isa === 'amx');
    // The tile unit multiplies 16 × 16 × 32 at once: well past the vector units where it exists.
    if (info.isa === 'amx') expect(peakRate('amx', 20_000)!).toBeGreaterThan(2 * fma);
  });
});
