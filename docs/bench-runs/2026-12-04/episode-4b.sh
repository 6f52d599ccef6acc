#!/bin/bash
# Run by hand from the repository root (docs/benchmarks.md, "bf16 precision against the Python peer, attention on the
# tile unit"): the same episode at the 4B shape, ours only (the peer's 4B run does not fit beside it on 24 GiB).
cd /work/main
D=docs/bench-runs/2026-12-04
export IWIBENCH_CACHE_DIR=$(mktemp -d)
echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) start 4b" >> $D/runs.txt
npx iwibench bench episode --preset gemma-3-4b-shape --model-dir /tmp/iwibench-bench-gemma-3-4b-shape --limits 120 --precision bf16 > $D/episode-4b-bf16-amx.json 2>>/tmp/m10.log
echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) episode 4b bf16 amx exit $?" >> $D/runs.txt
