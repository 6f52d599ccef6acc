// ms a products call on one matrix [N, 1152] at M rows, bf16, one thread (results.txt). TREE: the worktree measured.
const { products, setKernelThreads, useIsa } = await import((process.env.TREE ?? '/tmp/exp') + '/engine/kernels.ts');
if (process.env.ISA) useIsa(process.env.ISA);
setKernelThreads(1);
const m = Number(process.env.M ?? 8),
  k = 1152,
  n = Number(process.env.N ?? 6912);
const w = new Uint16Array(n * k).map((_, i) => 0x3c00 | (i & 0x3ff));
const x = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i));
const out = new Float32Array(m * n);
const t = performance.now();
let c = 0;
while (performance.now() - t < 4000) {
  products(x, [w], [out], m, k, { bf16: true, roundOutput: true });
  c++;
}
console.log('ms/call', (performance.now() - t) / c);
