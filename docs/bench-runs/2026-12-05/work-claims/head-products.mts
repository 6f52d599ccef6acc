// ms per products call of a tied head (262,144 outputs) at k = 64 (the tiny checkpoint) and 1,152 (1B), 1, 8 and 120 rows,
// on each path: TREE=<worktree> ISAS=avx512,avx2 node --import tsx head-products.mts
const { products, readBandwidth, useIsa } = await import((process.env.TREE ?? '/work/main') + '/engine/kernels.ts');
const n = 262144;
for (const isa of (process.env.ISAS ?? 'avx512,avx2').split(',')) {
  useIsa(isa);
  for (const k of [64, 1152]) for (const m of [1, 8, 120]) {
    const w = new Uint16Array(n * k).fill(0x3c00);
    const x = new Float32Array(m * k).fill(0.5);
    const out = new Float32Array(m * n);
    products(x, [w], [out], m, k, { bf16: true, roundOutput: false });
    const t0 = performance.now();
    const reps = 5;
    for (let i = 0; i < reps; i++) products(x, [w], [out], m, k, { bf16: true, roundOutput: false });
    const ms = (performance.now() - t0) / reps;
    console.log(isa, `k=${k} m=${m}`, ms.toFixed(2), 'ms', ((w.byteLength / ms) / 1e6).toFixed(1), 'GB/s of W', ((2 * m * n * k / ms) / 1e6).toFixed(1), 'GFLOP/s');
  }
}
console.log('read bandwidth GB/s', readBandwidth(new Uint8Array(256 << 20), 10).toFixed(1));
