# Loads make.ts's exported checkpoints with transformers and its LoRA adapters with PEFT; compares logits with
# ours.json (this engine's logits of the same edits in memory). See make.ts for how to run.
import json, torch, numpy as np, warnings
warnings.filterwarnings("ignore")
from transformers import AutoModelForCausalLM, Gemma3ForConditionalGeneration
from peft import PeftModel
ours = json.load(open("ours.json"))
ids = torch.tensor([ours["ids"]])
def load(path, preset):
    cls = AutoModelForCausalLM if preset == "tiny" else Gemma3ForConditionalGeneration
    return cls.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()
def last(model):
    with torch.no_grad():
        return model(input_ids=ids).logits[0, -1].float().numpy()
for preset in ["tiny", "tiny-4b"]:
    o = {k: np.array(v, dtype=np.float32) for k, v in ours[preset].items()}
    base = last(load(preset, preset))
    full = last(load(f"{preset}-out", preset))
    lora_full = last(load(f"{preset}-lout", preset))
    peft = PeftModel.from_pretrained(load(preset, preset), f"{preset}-lout/peft").eval()
    lora_peft = last(peft)
    d = lambda a, b: float(np.max(np.abs(a - b)))
    print(preset, json.dumps({
        "hf_base_vs_ours_base": d(base, o["base"]),
        "hf_exported_vs_ours_edited": d(full, o["full"]),
        "edit_size": d(o["full"], o["base"]),
        "hf_lora_exported_vs_ours": d(lora_full, o["lora"]),
        "hf_peft_vs_ours": d(lora_peft, o["lora"]),
        "lora_edit_size": d(o["lora"], o["base"]),
        "argmax_same": [int(full.argmax()) == int(o["full"].argmax()), int(lora_peft.argmax()) == int(o["lora"].argmax())],
        "peft_modules": sum(1 for n, _ in peft.named_modules() if n.endswith("lora_A")),
    }))
