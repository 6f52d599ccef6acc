#!/usr/bin/env bash
# One session, nothing else running, on one 2-vCPU AMD EPYC (Zen 5): the main job (bench episode, 1B shape, 120 items
# at 120 rows) against Hugging Face transformers (scripts/bench/hf_peer.py, static batch of all 120 items) in bf16
# and in float32, and the same with both sides held to AVX2 (IWIBENCH_ISA=avx2; ATEN_CPU_CAPABILITY=avx2 and
# ONEDNN_MAX_CPU_ISA=AVX2 for PyTorch), alternating ours and theirs.
set -u
M=/tmp/iwibench-bench-gemma-3-1b-shape
A=/work/main
PY=/work/hf-venv/bin/python
cd /tmp/bench48b
ours() { local out=$1 prec=$2; shift 2; (cd $A && env "$@" node --single-threaded-gc bin/iwibench.js bench episode --preset gemma-3-1b-shape --model-dir $M --precision $prec --limits 120) > $out 2> $out.err; echo "$out $? $(date +%T)"; }
hf() { local out=$1 dtype=$2; shift 2; (cd $A && env "$@" $PY scripts/bench/hf_peer.py episode --model-dir $M --items /tmp/items.json --batch all --dtype $dtype) > $out 2> $out.err; echo "$out $? $(date +%T)"; }
date +%T
ours ours-bf16-1.json bf16 X=1
hf hf-bf16-1.json bfloat16 X=1
ours ours-float32-1.json float32 X=1
hf hf-float32-1.json float32 X=1
ours ours-avx2-float32-1.json float32 IWIBENCH_ISA=avx2
hf hf-avx2-float32-1.json float32 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
ours ours-avx2-bf16-1.json bf16 IWIBENCH_ISA=avx2
ours ours-bf16-2.json bf16 X=1
hf hf-bf16-2.json bfloat16 X=1
ours ours-float32-2.json float32 X=1
hf hf-float32-2.json float32 X=1
ours ours-avx2-float32-2.json float32 IWIBENCH_ISA=avx2
hf hf-avx2-float32-2.json float32 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
