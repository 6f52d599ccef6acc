#!/bin/bash
# Run by hand from the repository root after measure.sh (docs/benchmarks.md, "bf16 precision against the Python peer,
# attention on the tile unit"): four more alternating pairs of `bench engine` and the peer, numbered after
# measure.sh's three, for the prefill's ratio.
cd /work/main
D=docs/bench-runs/2026-12-04
HF=/work/hf-venv/bin/python
for r in 4 5 6 7; do
  export IWIBENCH_CACHE_DIR=$(mktemp -d)
  npx iwibench bench engine --model-dir /work/ckpt-1b --precision bf16 > $D/engine-bf16-amx-$r.json 2>>/tmp/m7.log
  echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) engine bf16 amx $r" >> $D/runs.txt
  $HF scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b > $D/hf-engine-amx-$r.json 2>>/tmp/m7.log
  echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) hf engine amx $r" >> $D/runs.txt
done
