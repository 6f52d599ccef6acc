#!/usr/bin/env bash
# Alternating pairs, nothing else running, one 2-vCPU AMD EPYC (Zen 5): the main job (bench episode, 1B shape, 120
# items at 120 rows) with the AVX2 path's panel tiles of 3 rows and no few-row path (A, /work/main) against the commit
# before (B, /tmp/exp at 91cbee0), on AVX2 (IWIBENCH_ISA=avx2) in bf16 and float32, and on AVX-512 in bf16.
set -u
M=/tmp/iwibench-bench-gemma-3-1b-shape
A=/work/main; B=/tmp/exp
cd /tmp/bench48c
ep() { local tree=$1 out=$2 prec=$3; shift 3; (cd $tree && env "$@" node --single-threaded-gc bin/iwibench.js bench episode --preset gemma-3-1b-shape --model-dir $M --precision $prec --limits 120) > $out 2> $out.err; echo "$out $? $(date +%T)"; }
date +%T
ep $A after-avx2-bf16.json bf16 IWIBENCH_ISA=avx2
ep $B before-avx2-bf16.json bf16 IWIBENCH_ISA=avx2
ep $A after-avx2-float32.json float32 IWIBENCH_ISA=avx2
ep $B before-avx2-float32.json float32 IWIBENCH_ISA=avx2
ep $A after-avx512-bf16.json bf16 X=1
ep $B before-avx512-bf16.json bf16 X=1
