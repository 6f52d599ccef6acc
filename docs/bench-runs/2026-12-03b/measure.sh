#!/bin/bash
# Run by hand from the repository root (docs/benchmarks.md, "bf16 precision against the Python peer"): the Python peer
# needs its venv and /work/ckpt-1b made as "The Python peer" says; the "before" run-prime needs a worktree of bd166f9
# (main before bf16 precision) at /work/base with its addon built. Each command gets a fresh speed cache.
# The main job, ours against HF transformers bf16, back to back on one machine (issue 40's figures).
cd /work/main
D=docs/bench-runs/2026-12-03b
rm -f $D/*.json $D/runs.txt
npx iwibench episode --family local_factual_update --seed 3 --view admin > /tmp/items.json 2>/dev/null
HF=/work/hf-venv/bin/python
fresh() { export IWIBENCH_CACHE_DIR=$(mktemp -d); }
log() { echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) $*" >> $D/runs.txt; }
log start
fresh; npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision bf16 > $D/episode-bf16-amx.json 2>>/tmp/m3.log; log episode bf16 amx
$HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch all > $D/hf-episode-all-amx.json 2>>/tmp/m3.log; log hf all amx
$HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch 64 > $D/hf-episode-64-amx.json 2>>/tmp/m3.log; log hf 64 amx
fresh; IWIBENCH_PREFILL_GEMM=onnxruntime npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision bf16 > $D/episode-bf16-noamx.json 2>>/tmp/m3.log; log episode bf16 noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch all > $D/hf-episode-all-noamx.json 2>>/tmp/m3.log; log hf all noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch 64 > $D/hf-episode-64-noamx.json 2>>/tmp/m3.log; log hf 64 noamx
fresh; npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision float32 > $D/episode-float32-amx.json 2>>/tmp/m3.log; log episode float32 amx
npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-amx.json 2>>/tmp/m3.log; log engine bf16
$HF scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-amx.json 2>>/tmp/m3.log; log hf engine
IWIBENCH_PREFILL_GEMM=onnxruntime npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-noamx.json 2>>/tmp/m3.log; log engine bf16 noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-noamx.json 2>>/tmp/m3.log; log hf engine noamx
# run-prime: two fresh-process evaluations of the episode, the noop editor; main before bf16 precision (float32, the
# only arithmetic then) against now (bf16, the default).
rm -rf /tmp/rp-now /tmp/rp-base; fresh; npx iwibench run-prime --family local_factual_update --seed 3 --model-dir /work/ckpt-1b --editor-model builtin:noop --output-dir /tmp/rp-now > /tmp/rp-now.out 2>>/tmp/m3.log; cp /tmp/rp-now/results.json $D/run-prime-now-results.json; log run-prime now
fresh; (cd /work/base && npx iwibench run-prime --family local_factual_update --seed 3 --model-dir /work/ckpt-1b --editor-model builtin:noop --output-dir /tmp/rp-base > /tmp/rp-base.out 2>>/tmp/m3.log); cp /tmp/rp-base/results.json $D/run-prime-before-results.json; log run-prime before
log end
