#!/usr/bin/env bash
# bench engine (1B shape, bf16) on the AVX2 path, alternating this build (A) and the commit before (B).
set -u
M=/tmp/iwibench-bench-gemma-3-1b-shape
A=/work/main; B=/tmp/exp
cd /tmp/bench48c
en() { (cd $1 && IWIBENCH_ISA=avx2 node --single-threaded-gc bin/iwibench.js bench engine --preset gemma-3-1b-shape --model-dir $M --precision bf16) > $2 2> $2.err; echo "$2 $? $(date +%T)"; }
date +%T
en $A engine-after-avx2-1.json
en $B engine-before-avx2-1.json
en $A engine-after-avx2-2.json
en $B engine-before-avx2-2.json
