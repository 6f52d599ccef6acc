#!/usr/bin/env bash
# Alternating pairs: the new build (one arithmetic) and the build before it, the main job (bench episode, 1B shape,
# bf16, 120 rows), then the new build on AVX2 (IWIBENCH_ISA=avx2) and float32.
set -u
M=/tmp/iwibench-bench-gemma-3-1b-shape
A=/work/main; B=/tmp/before
ep() { (cd $1 && env $2 node --single-threaded-gc bin/iwibench.js bench episode --preset gemma-3-1b-shape --model-dir $M --precision $3 --limits 120) > $4 2> $4.err; echo "$4 $?"; }
ep $A "" bf16 after-bf16-1.json
ep $B "" bf16 before-bf16-1.json
ep $A "" bf16 after-bf16-2.json
ep $B "" bf16 before-bf16-2.json
ep $A IWIBENCH_ISA=avx2 bf16 after-avx2-bf16.json
ep $A "" float32 after-float32.json
ep $B "" float32 before-float32.json
P=/work/hf-venv/bin/python
(cd /work/main && $P scripts/bench/hf_peer.py episode --model-dir $M --items /tmp/items.json --batch all > /tmp/bench/hf-bf16.json 2> /tmp/bench/hf-bf16.err; echo "hf-bf16 $?")
(cd /work/main && $P scripts/bench/hf_peer.py episode --model-dir $M --items /tmp/items.json --batch all --dtype float32 > /tmp/bench/hf-float32.json 2> /tmp/bench/hf-float32.err; echo "hf-float32 $?")
(cd /work/main && ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 $P scripts/bench/hf_peer.py episode --model-dir $M --items /tmp/items.json --batch all --dtype float32 > /tmp/bench/hf-float32-avx2.json 2> /tmp/bench/hf-float32-avx2.err; echo "hf-float32-avx2 $?")
