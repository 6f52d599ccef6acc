// ms per products call at several row counts, a 1B layer's shapes; weights rotated over copies past 256 MiB (results.txt).
const { products, setKernelThreads, kernelInfo, adviseHugePages, useIsa } = await import(
  (process.env.TREE ?? '/tmp/exp') + '/engine/kernels.ts'
);
if (process.env.ISA) useIsa(process.env.ISA);
setKernelThreads(2);
const shapes: [string, number[], number][] = [
  ['qkv', [1024, 256, 256], 1152],
  ['o', [1152], 1024],
  ['gate+up', [6912, 6912], 1152],
  ['down', [1152], 6912],
];
function weights(count: number, seed: number) {
  const w = new Uint16Array(new SharedArrayBuffer(count * 2));
  adviseHugePages(w);
  for (let i = 0; i < count; i++) w[i] = 0x3c00 | ((Math.imul(i + seed, 0x9e3779b1) >>> 22) & 0x3ff) | ((i & 1) << 15);
  return w;
}
const ms = (process.env.MS ?? '1,2,4,8,16').split(',').map(Number);
const out: Record<string, number[]> = {};
let stepTotal = new Array(ms.length).fill(0);
for (const [name, parts, k] of shapes) {
  const bytes = parts.reduce((a, b) => a + b) * k * 2;
  const copies = Math.max(1, Math.ceil((256 << 20) / bytes));
  const ws = Array.from({ length: copies }, (_, c) => parts.map((n, p) => weights(n * k, c + p)));
  out[name] = ms.map((m, mi) => {
    const x = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i));
    const outs = parts.map((n) => new Float32Array(m * n));
    const call = (c: number) =>
      products(x, ws[c]!, outs, m, k, {
        bf16: process.env.PREC !== 'float32',
        roundOutput: process.env.PREC !== 'float32',
      });
    for (let c = 0; c < copies; c++) call(c);
    const res: number[] = [];
    for (let w = 0; w < 5; w++) {
      const t = performance.now();
      let n = 0;
      while (performance.now() - t < 150 || n < copies) {
        call(n % copies);
        n++;
      }
      res.push((performance.now() - t) / n);
    }
    const v = res.sort((a, b) => a - b)[2]!;
    stepTotal[mi] += v * 26;
    return +v.toFixed(3);
  });
}
console.log(
  process.env.LABEL ?? '',
  kernelInfo().isa ?? '',
  JSON.stringify(out),
  'step(26 layers, no head):',
  stepTotal.map((v) => v.toFixed(1)).join(' '),
);
