"""Golden logits, token ids and greedy answers from Hugging Face transformers for the committed toy target,
so the engine is checked against the reference implementation on a trained model, not only on random weights.

Run (CPU is enough):
    python3 -m venv /tmp/hf && /tmp/hf/bin/pip install torch transformers numpy
    /tmp/hf/bin/python test/golden/make_toy_golden.py toy/target test/golden/toy-target.json

Writes the SHA-256 of the toy's safetensors (so the test can tell a retrained toy from a wrong engine), and per chat:
the ids of HF's tokenizer with the chat template, the float32 logits of every position for a fixed set of vocab ids,
the argmax and log-sum-exp over the whole vocabulary, and HF's greedy answer (Gemma3ForCausalLM, float32, eager).
"""
import hashlib, json, sys
import numpy as np
import torch
import transformers
from transformers import AutoTokenizer, Gemma3ForCausalLM

SOURCE, OUT = sys.argv[1], sys.argv[2]
CHATS = [
    [{"role": "user", "content": "Who is the current prime minister of Belgium?"}],
    [{"role": "system", "content": "Answer in one sentence."}, {"role": "user", "content": "What is the capital of Kenya? Thanks!"}],
    [{"role": "user", "content": "Ünïcödé 🙂 and 東京 still encode (byte fallback)."}],
]
VOCAB_IDS = list(range(0, 128)) + [363, 1036, 1332, 4095]

tokenizer = AutoTokenizer.from_pretrained(SOURCE)
model = Gemma3ForCausalLM.from_pretrained(SOURCE, dtype=torch.float32, attn_implementation="eager").eval()
cases = []
for messages in CHATS:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
    ids = list(ids["input_ids"] if isinstance(ids, dict) else ids)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
        generated = model.generate(torch.tensor([ids]), max_new_tokens=40, do_sample=False, eos_token_id=[1, 106])[0][len(ids):]
    answer_ids = [int(t) for t in generated if int(t) not in (1, 106)]
    cases.append({
        "messages": messages,
        "ids": ids,
        "logits": logits[:, VOCAB_IDS].numpy().astype(np.float32).tolist(),
        "argmax": logits.argmax(dim=-1).tolist(),
        "logsumexp": torch.logsumexp(logits, dim=-1).tolist(),
        "max_abs_logit": float(logits.abs().max()),
        "greedy_ids": answer_ids,
        "greedy_text": tokenizer.decode(answer_ids, skip_special_tokens=True),
    })
digest = hashlib.sha256(open(f"{SOURCE}/model.safetensors", "rb").read()).hexdigest()
with open(OUT, "w") as f:
    json.dump({"checkpoint_sha256": digest, "transformers_version": transformers.__version__, "torch_version": torch.__version__,
               "vocab_ids": VOCAB_IDS, "cases": cases}, f)
for c in cases:
    print(len(c["ids"]), c["max_abs_logit"], repr(c["greedy_text"]))
