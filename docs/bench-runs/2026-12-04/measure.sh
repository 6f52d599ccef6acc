#!/bin/bash
# Run by hand from the repository root (docs/benchmarks.md, "bf16 precision against the Python peer, attention on the tile unit"):
# the Python peer needs its venv and /work/ckpt-1b made as "The Python peer" says. Each of our commands gets a fresh
# speed cache. The prefill pair three times, alternating, then the main job with and without the tile unit.
cd /work/main
D=docs/bench-runs/2026-12-04
rm -f $D/*.json $D/runs.txt
npx iwibench episode --family local_factual_update --seed 3 --view admin > /tmp/items.json 2>/dev/null
HF=/work/hf-venv/bin/python
fresh() { export IWIBENCH_CACHE_DIR=$(mktemp -d); }
log() { echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) $*" >> $D/runs.txt; }
log start
for r in 1 2 3; do
  fresh; npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-amx-$r.json 2>>/tmp/m5.log; log engine bf16 amx $r
  $HF scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-amx-$r.json 2>>/tmp/m5.log; log hf engine amx $r
done
fresh; npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision bf16 > $D/episode-bf16-amx.json 2>>/tmp/m5.log; log episode bf16 amx
$HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch all > $D/hf-episode-all-amx.json 2>>/tmp/m5.log; log hf all amx
$HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch 64 > $D/hf-episode-64-amx.json 2>>/tmp/m5.log; log hf 64 amx
fresh; IWIBENCH_PREFILL_GEMM=onnxruntime npx iwibench bench episode --model-dir /work/ckpt-1b --limits 120 --precision bf16 > $D/episode-bf16-noamx.json 2>>/tmp/m5.log; log episode bf16 noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch all > $D/hf-episode-all-noamx.json 2>>/tmp/m5.log; log hf all noamx
ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 $HF scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items /tmp/items.json --batch 64 > $D/hf-episode-64-noamx.json 2>>/tmp/m5.log; log hf 64 noamx
log end
