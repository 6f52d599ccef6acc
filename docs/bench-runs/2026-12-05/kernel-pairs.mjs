// The products of one 1B layer's calls, this build (one arithmetic: `products`, every path the CPU runs, both
// precisions) against the build before it (its float32 `matmulBf16Parts` and bf16 `dotBf16Parts`, built with
// -march=native), loaded side by side in one process and alternated: the best of 5 calls each, three rounds (the
// portable path, a reference at ~1-2 GFLOP/s through libm's fma, is left out).
// The build before: `git worktree add /tmp/before 1cf9c41 && (cd /tmp/before && ONNXRUNTIME_NODE_INSTALL=skip npm ci)`.
// Run: node docs/bench-runs/2026-12-05/kernel-pairs.mjs /tmp/before > kernel-pairs.json
import { createRequire } from 'node:module';
import os from 'node:os';
const req = createRequire(import.meta.url);
const before = req(`${process.argv[2] ?? '/tmp/before'}/engine/native/build/Release/iwibench_kernels.node`);
const after = req(new URL('../../../engine/native/build/Release/iwibench_kernels.node', import.meta.url).pathname);
before.setThreads(2);
after.setThreads(2);
const shapes = [
  ['q+k+v', [1024, 256, 256], 1152],
  ['gate+up', [6912, 6912], 1152],
  ['down', [1152], 6912],
];
const weights = (n) => Uint16Array.from({ length: n }, (_, i) => 0x3c00 + (((i * 2654435761) >>> 20) % 0x800));
const best = (fn) => {
  fn();
  let b = Infinity;
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    fn();
    b = Math.min(b, performance.now() - t);
  }
  return b;
};
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const out = { cpu: os.cpus()[0]?.model, date: new Date().toISOString(), dispatch: after.dispatch(), gflop_per_s: {} };
for (const m of [1, 8, 64, 120, 512])
  for (const [name, parts, k] of shapes) {
    const ws = parts.map((n) => weights(n * k));
    const outs = parts.map((n) => new Float32Array(m * n));
    const x = Float32Array.from({ length: m * k }, (_, i) => Math.sin(i));
    const flop = (2 * m * k * parts.reduce((a, b) => a + b)) / 1e6;
    const runs = {
      'before float32': () => before.matmulBf16Parts(x, ws, outs, m, k),
      'before bf16': () => before.dotBf16Parts(x, ws, outs, m, k, false),
    };
    for (const isa of after.dispatch().available.filter((isa) => isa !== 'portable')) {
      runs[`${isa} float32`] = () => (after.useIsa(isa), after.products(x, ws, outs, m, k, false, false));
      runs[`${isa} bf16`] = () => (after.useIsa(isa), after.products(x, ws, outs, m, k, true, true));
    }
    const rates = Object.fromEntries(Object.keys(runs).map((key) => [key, []]));
    for (let round = 0; round < 3; round++)
      for (const [key, run] of Object.entries(runs)) rates[key].push(flop / best(run));
    out.gflop_per_s[`${name} m=${m}`] = Object.fromEntries(
      Object.entries(rates).map(([key, r]) => [key, +median(r).toFixed(1)]),
    );
    process.stderr.write(`${name} m=${m}: ${JSON.stringify(out.gflop_per_s[`${name} m=${m}`])}\n`);
  }
console.log(JSON.stringify(out, null, 2));
