#!/usr/bin/env bash
# The GPU path's check on a machine with a GPU (the tests run it on CPU providers only): bash scripts/device-check.sh
#
# Installs and downloads nothing (run `npm ci` beforehand, as the README says) and ends within 8 minutes (each step
# has its own timeout: 90 + 150 + 220 s). Three steps, each reported as one JSON line on stdout:
#   1. provider: a projection of the 1B shape (x [8, 1152] · Wᵀ, W [6912, 1152] holding BF16 values) on
#      onnxruntime-node's GPU provider, against the CPU BF16 kernel. CUDA where its libraries are present beside
#      the binding (they come from NuGet at install time, which these machines cannot reach), WebGPU (bundled: Dawn
#      on Vulkan) otherwise or if CUDA fails. The line says which provider ran, or each one's error text.
#   2. golden: test/engine/golden.test.ts with IWIBENCH_TEST_DEVICE set to that provider: the engine's logits
#      on the device (`--device`, docs/engine.md "GPU") against Hugging Face transformers' on both tiny presets.
#   3. bench: `iwibench bench engine --preset gemma-3-1b-shape --device <provider>` (its JSON, on one line).
# Exit status: 0 every step ran and passed, 1 no GPU provider ran, 2 the golden test failed, 3 the benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# Float32 products on CUDA, not TF32 (onnxruntime's CUDA provider enables TF32 by default; the engine sets this too).
export NVIDIA_TF32_OVERRIDE=${NVIDIA_TF32_OVERRIDE:-0}
ROOT=$PWD
WORK=$(mktemp -d "${TMPDIR:-/tmp}/iwibench-device-check-XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if [ ! -d node_modules/onnxruntime-node ] || [ ! -e node_modules/.bin/tsx ]; then
  echo 'device-check: node_modules is missing; run `ONNXRUNTIME_NODE_INSTALL=skip npm ci` first (this script installs nothing)' >&2
  exit 1
fi
command -v nvidia-smi >/dev/null && nvidia-smi -L >&2

# Step 1: the provider, on a real projection.
cat >"$WORK/probe.mts" <<EOF
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { DataType, GraphBuilder, kernelInfo, matmulBf16 } from '$ROOT/engine/index.ts';

const [M, N, K] = [8, 6912, 1152];
let seed = 7;
const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32) - 0.5;
const bits = Uint16Array.from({ length: N * K }, () => new Uint32Array(Float32Array.of(random() / 8).buffer)[0]! >>> 16);
const widened = new Float32Array(new Uint32Array(Array.from(bits, (b) => b << 16)).buffer);
const x = Float32Array.from({ length: M * K }, random);
const reference = new Float32Array(M * N);
matmulBf16(x, bits, reference, M, N, K);

const g = new GraphBuilder();
g.input('x', DataType.FLOAT, [M, K]);
g.initializer({ name: 'w', dims: [N, K], dataType: DataType.FLOAT, rawData: new Uint8Array(widened.buffer) });
g.output('y', g.one('Gemm', ['x', 'w'], { transB: { i: 1 } }), DataType.FLOAT, [M, N]);
const model = g.toBytes('projection');

const require = createRequire('$ROOT/package.json'); // this file is outside the repository
const ort = require('onnxruntime-node') as typeof Ort;
const binding = path.dirname(require.resolve('onnxruntime-node/bin/napi-v6/linux/x64/onnxruntime_binding.node'));
const cuda = existsSync(path.join(binding, 'libonnxruntime_providers_cuda.so'));
const errors: Record<string, string> = {};
for (const provider of cuda ? ['cuda', 'webgpu'] : ['webgpu']) {
  try {
    const session = await ort.InferenceSession.create(model, { executionProviders: [provider], logSeverityLevel: 3 });
    const feeds = { x: new ort.Tensor('float32', x, [M, K]) };
    const runMs: number[] = [];
    let y = new Float32Array(0);
    for (let run = 0; run < 5; run++) {
      const start = performance.now();
      y = (await session.run(feeds)).y!.data as Float32Array;
      runMs.push(Math.round((performance.now() - start) * 100) / 100);
    }
    let maxDiff = 0;
    let maxAbs = 0;
    for (let i = 0; i < y.length; i++) (maxDiff = Math.max(maxDiff, Math.abs(y[i]! - reference[i]!))), (maxAbs = Math.max(maxAbs, Math.abs(reference[i]!)));
    const cpuStart = performance.now();
    matmulBf16(x, bits, reference, M, N, K);
    const cpuMs = Math.round((performance.now() - cpuStart) * 100) / 100;
    console.log(JSON.stringify({ step: 'provider', provider, ran: true, shape: [M, N, K], run_ms: runMs, cpu_kernel_ms: cpuMs, kernel: kernelInfo(),
      max_abs_diff: maxDiff, max_abs_value: maxAbs, bitwise_equal: y.every((v, i) => v === reference[i]), cuda_libraries: cuda, errors }));
    process.exit(0);
  } catch (error) {
    errors[provider] = (error as Error).message;
  }
}
console.log(JSON.stringify({ step: 'provider', provider: null, ran: false, cuda_libraries: cuda, errors }));
process.exit(1);
EOF
PROBE=$(timeout 90 node --import tsx "$WORK/probe.mts" 2>"$WORK/probe.err")
STATUS=$?
[ -n "$PROBE" ] && echo "$PROBE"
if [ $STATUS -ne 0 ]; then
  [ -z "$PROBE" ] && echo "{\"step\":\"provider\",\"ran\":false,\"exit\":$STATUS}"
  echo "device-check: no GPU provider of onnxruntime-node ran here (its errors are above)" >&2
  grep -v XDG_RUNTIME_DIR "$WORK/probe.err" | tail -5 >&2
  exit 1
fi
PROVIDER=$(node -e 'console.log(JSON.parse(process.argv[1]).provider)' "$PROBE")

# Step 2: the golden logits on that device (vitest from node_modules: nothing is fetched).
GOLDEN_LOG="$WORK/golden.log"
IWIBENCH_TEST_DEVICE=$PROVIDER timeout 150 node_modules/.bin/vitest run test/engine/golden.test.ts >"$GOLDEN_LOG" 2>&1
GOLDEN=$?
SUMMARY=$(sed 's/\x1b\[[0-9;]*m//g' "$GOLDEN_LOG" | grep -E '^ *Tests +[0-9]' | tr -s ' ' | tail -1)
node -e 'console.log(JSON.stringify({ step: "golden", device: process.argv[1], passed: process.argv[2] === "0", exit: Number(process.argv[2]), summary: process.argv[3].trim() }))' "$PROVIDER" "$GOLDEN" "$SUMMARY"
if [ $GOLDEN -ne 0 ]; then
  grep -v XDG_RUNTIME_DIR "$GOLDEN_LOG" | tail -30 >&2
  echo "device-check: the golden logits test failed on --device $PROVIDER" >&2
  exit 2
fi

# Step 3: bench engine on the 1B shape (bin/iwibench.js itself: `npx iwibench` in the repository installs it into
# npx's cache, which runs its install script and so rebuilds the addon); it makes its checkpoint in the system temp
# folder on first use (2 GB, kept for the next run, as `bench engine` does).
BENCH=$(timeout 220 node bin/iwibench.js bench engine --preset gemma-3-1b-shape --device "$PROVIDER" 2>"$WORK/bench.err")
STATUS=$?
if [ $STATUS -ne 0 ]; then
  node -e 'console.log(JSON.stringify({ step: "bench", device: process.argv[1], ran: false, exit: Number(process.argv[2]) }))' "$PROVIDER" "$STATUS"
  grep -v XDG_RUNTIME_DIR "$WORK/bench.err" | tail -10 >&2
  echo "device-check: bench engine failed on --device $PROVIDER" >&2
  exit 3
fi
node -e 'console.log(JSON.stringify({ step: "bench", ...JSON.parse(process.argv[1]) }))' "$BENCH"
echo "device-check: $PROVIDER ran the projection, passed the golden logits test and ran bench engine" >&2
exit 0
