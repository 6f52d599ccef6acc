#!/usr/bin/env python3
"""The Python peer of IWIBench's engine: Hugging Face transformers on PyTorch, bfloat16 (or --dtype float32), on this CPU.

Not part of the project: run by hand from a venv outside the repository (docs/benchmarks.md, "The Python peer").
It loads Gemma3ForCausalLM in torch.bfloat16 from a checkpoint folder and prints one JSON line:

  episode  an episode's graded items, as `npx iwibench bench episode` generates them: each item's chat messages
           through the checkpoint's chat template (one BOS, no other special tokens added), greedy, each with its own
           max_new_tokens, stopping at <eos> (1) or <end_of_turn> (106), the stop token not counted. Static batches
           of --batch items (or all), sorted by max_new_tokens, left-padded; a row past its own cap stops (and is
           padded) while the rest of its batch runs on. Reports the generation's wall time, the generated tokens
           and tokens per second.
  engine   what `npx iwibench bench engine` measures: the prefill of a 512-token prompt (generate 1 token, median
           of 3 after a warm-up), and decode ms a step at batch 1 and 8 (prompts of 32 + b tokens, 16 new tokens,
           the steps after the first decode step, median of 3 calls after a warm-up).

  /work/hf-venv/bin/python scripts/bench/hf_peer.py episode --model-dir /work/ckpt-1b --items items.json --batch 32
  /work/hf-venv/bin/python scripts/bench/hf_peer.py engine --model-dir /work/ckpt-1b

where items.json is what `npx iwibench episode --family local_factual_update --seed 3 --view admin` prints
(`--items -` reads it from stdin). ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 in the environment keeps oneDNN (PyTorch's
bf16 matmuls) off the AMX tile unit.
"""

import argparse
import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch
import transformers
from transformers import (
    AutoTokenizer,
    Gemma3ForCausalLM,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

STOP_IDS = (1, 106)  # <eos>, <end_of_turn>: the engine's STOP_IDS (engine/tokenizer.ts)
STOP_REASONS = {1: 'eos', 106: 'end_of_turn'}
PAD_ID = 0


def onednn_info() -> dict:
    """The ISA oneDNN reports here and the implementation of a bf16 matmul, from ONEDNN_VERBOSE in a child process."""
    code = 'import torch; x = torch.ones(64, 64, dtype=torch.bfloat16); x @ x'
    env = {**os.environ, 'ONEDNN_VERBOSE': '1'}
    try:
        out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    info = {}
    for line in out.splitlines():
        fields = line.split(',')
        if 'info' in fields and any(f.startswith('isa:') for f in fields):
            info['isa'] = next(f for f in fields if f.startswith('isa:'))[4:]
        if 'exec' in fields and 'matmul' in fields:
            info['bf16_matmul'] = fields[fields.index('matmul') + 1]
    return info


def header(mode: str, args: argparse.Namespace) -> dict:
    return {
        'bench': f'hf_peer {mode}',
        'date': datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds'),
        'torch': torch.__version__,
        'transformers': transformers.__version__,
        'python': sys.version.split()[0],
        'torch_threads': torch.get_num_threads(),
        'dtype': args.dtype,
        'aten_cpu_capability': torch.backends.cpu.get_cpu_capability(),
        'onednn': onednn_info(),
        'onednn_max_cpu_isa': os.environ.get('ONEDNN_MAX_CPU_ISA'),
        'args': vars(args),
    }


class RowCaps(StoppingCriteria):
    """Each row stops at its own max_new_tokens (the batch's generate runs to the largest)."""

    def __init__(self, caps: list[int], prompt_width: int):
        self.caps = torch.tensor(caps)
        self.width = prompt_width

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.BoolTensor:
        return (input_ids.shape[1] - self.width) >= self.caps


class StepTimes(LogitsProcessor):
    """The time each step's logits are ready (one call a step for the whole batch); the logits pass unchanged."""

    def __init__(self):
        self.times = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        self.times.append(time.perf_counter())
        return scores


def left_padded(prompts: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Input ids and attention mask, the prompts right-aligned on PAD_ID (generate derives positions from the mask)."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt):] = torch.tensor(prompt)
        mask[row, width - len(prompt):] = 1
    return ids, mask


def generate(model, prompts: list[list[int]], caps: list[int], processors=None) -> list[tuple[int, str]]:
    """Greedy generation of a static batch: each row's (generated tokens, stop reason), the stop token not counted."""
    ids, mask = left_padded(prompts)
    width = ids.shape[1]
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=max(caps),
        stopping_criteria=StoppingCriteriaList([RowCaps(caps, width)]),
        logits_processor=processors,
    )
    results = []
    for row, cap in enumerate(caps):
        new = out[row, width:width + cap].tolist()
        stop = next((k for k, t in enumerate(new) if t in STOP_IDS), None)
        results.append((cap, 'length') if stop is None else (stop, STOP_REASONS[new[stop]]))
    return results


def load(args: argparse.Namespace):
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = Gemma3ForCausalLM.from_pretrained(args.model_dir, dtype=getattr(torch, args.dtype), attn_implementation=args.attn)
    model.eval()
    # Greedy and the engine's stop ids, in place of the checkpoint's sampling settings (generation_config.json).
    model.generation_config = GenerationConfig(
        do_sample=False, eos_token_id=list(STOP_IDS), pad_token_id=PAD_ID, bos_token_id=2
    )
    generate(model, [[2, 105]], [1])  # reads every weight once
    return tokenizer, model, time.perf_counter() - start


def episode(args: argparse.Namespace) -> dict:
    source = sys.stdin if args.items == '-' else open(args.items, encoding='utf-8')
    with source:
        spec = json.load(source)['episode']
    # The graded items in the engine's order (taskset/episode.ts, gradedItems): terminal items, then the controls.
    terminal = spec['terminal']
    items = terminal['target'] + terminal['preservation'] + terminal['override'] + spec['controls']
    tokenizer, model, load_seconds = load(args)
    # As the engine's Tokenizer.chatIds: the template's text, tokenized without added special tokens.
    prompts = [
        tokenizer(
            tokenizer.apply_chat_template(item['messages'], add_generation_prompt=True, tokenize=False),
            add_special_tokens=False,
        )['input_ids']
        for item in items
    ]
    caps = [item['maxNewTokens'] for item in items]
    order = sorted(range(len(items)), key=lambda k: caps[k])
    batch = len(items) if args.batch == 'all' else int(args.batch)
    results = {}
    start = time.perf_counter()
    for first in range(0, len(order), batch):
        rows = order[first:first + batch]
        print(f'batch of {len(rows)} from item {first} …', file=sys.stderr)
        for k, result in zip(rows, generate(model, [prompts[k] for k in rows], [caps[k] for k in rows])):
            results[k] = result
    seconds = time.perf_counter() - start
    generated = sum(n for n, _ in results.values())
    reasons = [reason for _, reason in results.values()]
    return {
        'episode': {'family': spec['family'], 'seed': spec['seed'], 'items': len(items)},
        'load_seconds': load_seconds,
        'batch': batch,
        'prompt_tokens': sum(len(p) for p in prompts),
        'max_new_tokens': sum(caps),
        'generated_tokens': generated,
        'stop_reasons': {r: reasons.count(r) for r in sorted(set(reasons))},
        'seconds': seconds,
        'generated_tokens_per_second': generated / seconds,
        'peak_rss_gib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def engine(args: argparse.Namespace) -> dict:
    _, model, load_seconds = load(args)
    prompt = [2 + (i * 7919) % 200_000 for i in range(args.prompt_tokens)]  # as scripts/bench/engine.ts

    def prefill_ms() -> float:
        times = []
        for call in range(4):  # call 0 warms up
            start = time.perf_counter()
            generate(model, [prompt], [1])
            if call > 0:
                times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times)

    def decode_ms(batch: int) -> float:
        """Ms a step from the first decode step's logits to the last, over the steps between (the prefill not in it)."""
        prompts = [prompt[:32 + b] for b in range(batch)]
        per_step = []
        for call in range(4):  # call 0 warms up
            steps = StepTimes()
            generate(model, prompts, [args.decode_tokens] * batch, LogitsProcessorList([steps]))
            if len(steps.times) < 3:
                raise RuntimeError(f'batch {batch}: every sequence stopped within its first step; nothing to time')
            if call > 0:
                per_step.append((steps.times[-1] - steps.times[1]) / (len(steps.times) - 2) * 1000)
        return statistics.median(per_step)

    print(f'prefill {len(prompt)} tokens …', file=sys.stderr)
    prefill = prefill_ms()
    print('decode batch 1 and 8 …', file=sys.stderr)
    decode1, decode8 = decode_ms(1), decode_ms(8)
    return {
        'load_seconds': load_seconds,
        'prefill': {'prompt_tokens': len(prompt), 'ms': prefill, 'tokens_per_second': len(prompt) / (prefill / 1000)},
        'decode_ms_per_token': {
            'batch_1': decode1,
            'batch_8': decode8,
            'batch_8_tokens_per_second': 8 / (decode8 / 1000),
        },
        'peak_rss_gib': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('mode', choices=['episode', 'engine'])
    parser.add_argument('--model-dir', required=True, help='a Gemma 3 checkpoint folder (safetensors, tokenizer)')
    parser.add_argument('--items', help='episode: the JSON of `npx iwibench episode … --view admin` (- for stdin)')
    parser.add_argument('--batch', default='all', help='episode: items in each static batch, or all (default)')
    parser.add_argument('--prompt-tokens', type=int, default=512, help='engine: the prefill prompt (default 512)')
    parser.add_argument('--decode-tokens', type=int, default=16, help='engine: new tokens a decode call (default 16)')
    parser.add_argument('--threads', type=int, default=len(os.sched_getaffinity(0)), help='default: the cores')
    parser.add_argument('--attn', default='sdpa', help='attn_implementation: sdpa (default) or eager')
    parser.add_argument('--dtype', default='bfloat16', choices=['bfloat16', 'float32'], help='the model dtype (default bfloat16)')
    args = parser.parse_args()
    if args.mode == 'episode' and not args.items:
        parser.error('episode needs --items')
    if args.batch != 'all' and not (args.batch.isdigit() and int(args.batch) > 0):
        parser.error('--batch must be a positive integer or all')
    torch.set_num_threads(args.threads)
    report = header(args.mode, args)
    with torch.inference_mode():
        report.update(episode(args) if args.mode == 'episode' else engine(args))
    print(json.dumps(report))


if __name__ == '__main__':
    main()
