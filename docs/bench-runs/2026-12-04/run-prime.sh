#!/bin/bash
# Run by hand from the repository root after measure.sh (docs/benchmarks.md, "bf16 precision against the Python peer,
# attention on the tile unit"): run-prime's two fresh-process evaluations of the episode with the noop editor, a fresh
# speed cache. The figures are results.json's evaluation.pristine_seconds and edited_seconds.
cd /work/main
D=docs/bench-runs/2026-12-04
export IWIBENCH_CACHE_DIR=$(mktemp -d)
rm -rf /tmp/rp-now
npx iwibench run-prime --family local_factual_update --seed 3 --model-dir /work/ckpt-1b --editor-model builtin:noop --output-dir /tmp/rp-now > /tmp/rp-now.out 2>/tmp/rp-now.err
cp /tmp/rp-now/results.json $D/run-prime-results.json
echo "$(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg) run-prime" >> $D/runs.txt
