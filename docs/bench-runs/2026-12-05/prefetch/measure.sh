#!/usr/bin/env bash
# Alternating, nothing else running, one 2-vCPU AMD EPYC (Zen 5): this build (A: the panel's prefetch, few-row path up
# to 8 rows) against 1c9723d (B, a worktree): bench episode (1B shape, 120 items, 120 rows, bf16) on AVX2 and AVX-512,
# and bench engine (bf16) on AVX-512 and AVX2.
set -u
M=/tmp/iwibench-bench-gemma-3-1b-shape
A=/work/main; B=/tmp/exp
cd /tmp/bench48d
ep() { local tree=$1 out=$2; shift 2; (cd $tree && env "$@" node --single-threaded-gc bin/iwibench.js bench episode --preset gemma-3-1b-shape --model-dir $M --precision bf16 --limits 120) > $out 2> $out.err; echo "$out $? $(date +%T)"; }
en() { local tree=$1 out=$2; shift 2; (cd $tree && env "$@" node --single-threaded-gc bin/iwibench.js bench engine --preset gemma-3-1b-shape --model-dir $M --precision bf16) > $out 2> $out.err; echo "$out $? $(date +%T)"; }
date +%T
ep $A episode-after-avx2.json IWIBENCH_ISA=avx2
ep $B episode-before-avx2.json IWIBENCH_ISA=avx2
ep $A episode-after-avx512.json X=1
ep $B episode-before-avx512.json X=1
en $A engine-after-avx512.json X=1
en $B engine-before-avx512.json X=1
en $A engine-after-avx2.json IWIBENCH_ISA=avx2
en $B engine-before-avx2.json IWIBENCH_ISA=avx2
