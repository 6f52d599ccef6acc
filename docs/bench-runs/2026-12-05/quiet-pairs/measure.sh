#!/usr/bin/env bash
# Alternating pairs, one session, nothing else running: the build with one arithmetic (A, /work/main) and the build
# before it (B, /tmp/before at 1cf9c41): the main job (bench episode, 1B shape, bf16, 120 rows) and bench engine.
set -u
M=/tmp/iwibench-bench-gemma-3-1b-shape
A=/work/main; B=/tmp/before
cd /tmp/bench48
ep() { (cd $1 && node --single-threaded-gc bin/iwibench.js bench episode --preset gemma-3-1b-shape --model-dir $M --precision bf16 --limits 120) > $2 2> $2.err; echo "$2 $? $(date +%T)"; }
en() { (cd $1 && node --single-threaded-gc bin/iwibench.js bench engine --preset gemma-3-1b-shape --model-dir $M --precision bf16) > $2 2> $2.err; echo "$2 $? $(date +%T)"; }
ep $A episode-after-1.json
ep $B episode-before-1.json
ep $A episode-after-2.json
ep $B episode-before-2.json
en $A engine-after-1.json
en $B engine-before-1.json
en $A engine-after-2.json
en $B engine-before-2.json
