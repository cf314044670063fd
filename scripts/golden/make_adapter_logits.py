#!/usr/bin/env python3
"""What peft computes with an adapter it saved: the references for tach's --adapter and tach merge.

    scripts/golden/make_adapter_logits.py tests/fixtures

For each case of make_lora_fixtures.py, loads the base model with transformers and the adapter in
tests/fixtures/lora/<case>/adapter_init with PeftModel.from_pretrained, and writes
tests/fixtures/lora/<case>/adapter_logits.json: the logits (eval mode, f32) on every batch of
tests/fixtures/train/<case>/batches.json, from the adapter model and from merge_and_unload().
Development only: run with the virtualenv that has torch, transformers and peft.
"""
import json
import os
import sys

import peft
import torch
import transformers
from peft import PeftModel
from transformers import AutoModelForSequenceClassification

CASES = {
    "distilbert-cls2-f32": "encoders/distilbert-cls2-f32",
    "bert-cls2-f32": "encoders/bert-cls2-f32",
    "qwen2-cls-kv1-f32": "decoders/qwen2-cls-kv1-f32",
    "llama-cls-bias-f32": "decoders/llama-cls-bias-f32",
    "gemma3-cls-f32": "decoders/gemma3-cls-f32",
}


def logits_of(model, batches, has_types):
    out = []
    with torch.no_grad():
        for b in batches:
            kw = {k: torch.tensor(b[k]) for k in ("input_ids", "attention_mask")}
            if has_types:
                kw["token_type_ids"] = torch.tensor(b["token_type_ids"])
            out.append(model(**kw).logits.tolist())
    return out


def main(root):
    for case, base in CASES.items():
        src = os.path.join(root, base)
        adapter = os.path.join(root, "lora", case, "adapter_init")
        model = AutoModelForSequenceClassification.from_pretrained(src, attn_implementation="eager").float().eval()
        has_types = model.config.model_type == "bert"
        pm = PeftModel.from_pretrained(model, adapter).eval()
        batches = json.load(open(os.path.join(root, "train", case, "batches.json")))
        with_adapter = logits_of(pm, batches, has_types)
        merged = logits_of(pm.merge_and_unload().eval(), batches, has_types)
        path = os.path.join(root, "lora", case, "adapter_logits.json")
        with open(path, "w") as f:
            json.dump({"base": base, "adapter": "adapter_init", "logits": with_adapter, "merged_logits": merged,
                       "torch": torch.__version__, "transformers": transformers.__version__,
                       "peft": peft.__version__}, f, indent=1)
        print("wrote", path)


if __name__ == "__main__":
    main(sys.argv[1])
