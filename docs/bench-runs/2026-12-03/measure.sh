#!/bin/bash
# Run by hand from the repository root (docs/benchmarks.md, "bf16 precision"): the Python peer needs its venv and
# /work/ckpt-1b made as "The Python peer" says.
# The main job, ours against HF transformers bf16, back to back on one machine (issue 40's figures).
cd /work/main
D=docs/bench-runs/2026-12-03
rm -rf $D; mkdir -p $D
npx iwibench episode --family local_factual_update --seed 3 --view admin > /tmp/items.json 2>/dev/null
HF=/work/hf-venv/bin/python
log() { echo "$(date -u +%T) $*" >> $D/runs.txt; }
log start
npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision bf16 > $D/episode-bf16-amx.json 2>>/tmp/m2.log; log episode bf16 amx
$HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch all > $D/hf-episode-all-amx.json 2>>/tmp/m2.log; log hf all amx
$HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch 64 > $D/hf-episode-64-amx.json 2>>/tmp/m2.log; log hf 64 amx
IWIBENCH_PREFILL_GEMM=onnxruntime npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision bf16 > $D/episode-bf16-noamx.json 2>>/tmp/m2.log; log episode bf16 noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch all > $D/hf-episode-all-noamx.json 2>>/tmp/m2.log; log hf all noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch 64 > $D/hf-episode-64-noamx.json 2>>/tmp/m2.log; log hf 64 noamx
npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision float32 > $D/episode-float32-amx.json 2>>/tmp/m2.log; log episode float32 amx
npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-amx.json 2>>/tmp/m2.log; log engine bf16
IWIBENCH_PREFILL_GEMM=onnxruntime npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-noamx.json 2>>/tmp/m2.log; log engine bf16 noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-noamx.json 2>>/tmp/m2.log; log hf engine noamx
$HF scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-amx.json 2>>/tmp/m2.log; log hf engine
log end
