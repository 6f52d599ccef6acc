"""Golden logits from Hugging Face transformers for the project's tiny checkpoints, so the engine's forward pass is
checked against the reference implementation (optional: the tests read the committed JSON).

Run (CPU is enough: random configs need no download):
    python3 -m venv /tmp/hf && /tmp/hf/bin/pip install torch transformers numpy   # or docs/benchmarks.md's venv
    npx iwibench make-tiny-checkpoint --out /tmp/golden/tiny --preset tiny --seed 7
    npx iwibench make-tiny-checkpoint --out /tmp/golden/tiny-4b --preset tiny-4b --seed 7
    /tmp/hf/bin/python test/golden/make_golden.py /tmp/golden test/golden

Writes <preset>.json per preset: the SHA-256 of the checkpoint's safetensors (so the test can tell a changed
generator from a wrong engine), the token ids, and for every position the float32 logits of a fixed set of vocab
ids, the argmax and the log-sum-exp over the whole vocabulary (Gemma3ForCausalLM / Gemma3ForConditionalGeneration,
float32, eager attention). Under "bf16_error", the same model run in torch.bfloat16 (eager and sdpa attention): the
largest |bf16 − float32| logit over those positions and vocab ids, and the positions whose argmax differs, the bound
the engine's bf16 precision is held to (test/engine/precision.test.ts).
"""
import hashlib, json, os, sys
import numpy as np
import torch
import transformers
from transformers import Gemma3ForCausalLM, Gemma3ForConditionalGeneration

SOURCE, OUT = sys.argv[1], sys.argv[2]
# 23 tokens: longer than both presets' sliding windows (8 and 6), as in test/engine/runtime.test.ts.
IDS = [2, 105, 2364, 107, 818, 5279, 529, 9079, 563, 236881, 669, 2481, 15579, 529, 1040, 236764, 1041, 506, 2480, 106, 107, 105, 4368]
VOCAB_IDS = list(range(0, 512)) + [1902, 9259, 23115, 106, 107, 262143]

for preset, cls in [("tiny", Gemma3ForCausalLM), ("tiny-4b", Gemma3ForConditionalGeneration)]:
    folder = os.path.join(SOURCE, preset)
    digest = hashlib.sha256()
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".safetensors")):
        digest.update(open(os.path.join(folder, name), "rb").read())
    model = cls.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([IDS])).logits[0].float()
    out = {
        "preset": preset,
        "checkpoint_sha256": digest.hexdigest(),
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "ids": IDS,
        "vocab_ids": VOCAB_IDS,
        "logits": logits[:, VOCAB_IDS].numpy().astype(np.float32).tolist(),
        "argmax": logits.argmax(dim=-1).tolist(),
        "logsumexp": torch.logsumexp(logits, dim=-1).tolist(),
        "max_abs_logit": float(logits.abs().max()),
        "bf16_error": {},
    }
    for attention in ["eager", "sdpa"]:
        bf16 = cls.from_pretrained(folder, dtype=torch.bfloat16, attn_implementation=attention).eval()
        with torch.no_grad():
            low = bf16(input_ids=torch.tensor([IDS])).logits[0].float()
        out["bf16_error"][attention] = {
            "max_abs_error": float((low - logits)[:, VOCAB_IDS].abs().max()),
            "argmax_differs": int((low.argmax(dim=-1) != logits.argmax(dim=-1)).sum()),
        }
    with open(os.path.join(OUT, f"{preset}.json"), "w") as f:
        json.dump(out, f)
    print(preset, out["checkpoint_sha256"][:12], out["max_abs_logit"], out["bf16_error"])
