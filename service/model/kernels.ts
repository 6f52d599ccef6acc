// PLACEHOLDER (lead's): replaced by the native kernel helper's module at merge. Same signatures.
export function matmulBf16(x: Float32Array, w: Uint16Array, out: Float32Array, m: number, n: number, k: number): void {
  const wf = new Float32Array(k);
  const wu = new Uint32Array(wf.buffer);
  for (let j = 0; j < n; j++) {
    for (let i = 0; i < k; i++) wu[i] = w[j * k + i]! << 16;
    for (let r = 0; r < m; r++) {
      let acc = 0;
      for (let i = 0; i < k; i++) acc = Math.fround(acc + Math.fround(x[r * k + i]! * wf[i]!));
      out[r * n + j] = acc;
    }
  }
}

export function widenBf16(w: Uint16Array, out: Float32Array): void {
  const u = new Uint32Array(out.buffer, out.byteOffset, out.length);
  for (let i = 0; i < w.length; i++) u[i] = w[i]! << 16;
}

export function kernelInfo(): { native: boolean; threads: number } {
  return { native: false, threads: 1 };
}

export function readBandwidth(): { gbPerSecond: number; method: string } {
  const data = new Float32Array(1 << 26).fill(1);
  const t = performance.now();
  let s = 0;
  for (let i = 0; i < data.length; i++) s += data[i]!;
  return { gbPerSecond: (data.byteLength / ((performance.now() - t) / 1000) / 1e9) * (s > 0 ? 1 : 1), method: 'js' };
}
