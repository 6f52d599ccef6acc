#!/bin/bash
# Run by hand from the repository root after the others (docs/benchmarks.md, "bf16 precision against the Python peer,
# attention on the tile unit"): `bench engine` and the peer with both kept off the tile unit, one pair.
cd /work/main
D=docs/bench-runs/2026-12-04
export IWIBENCH_CACHE_DIR=$(mktemp -d)
IWIBENCH_PREFILL_GEMM=onnxruntime npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-noamx.json 2>>/tmp/m9.log
echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) engine bf16 noamx" >> $D/runs.txt
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 /work/hf-venv/bin/python scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-noamx.json 2>>/tmp/m9.log
echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) hf engine noamx" >> $D/runs.txt
