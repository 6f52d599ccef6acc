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
