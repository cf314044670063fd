#!/usr/bin/env python3
"""Training references for head-pruned encoders (recovery fine-tuning after tach prune --heads).

    scripts/golden/make_train_pruned_golden.py tests/fixtures tests/fixtures/train [CASE ...]

For each head-pruned checkpoint in tests/fixtures/prune (config.json's pruned_heads, as transformers
4 saved them), writes OUT/<family>-pruned-cls2/ with the files make_train_fixtures.py writes (the
gradients on one batch, 20 AdamW steps with the linear schedule and clipping, dropout off, bf16
autocast), from the same data and optimizer.

transformers 5 no longer prunes heads (prune_heads and config.json's pruned_heads are gone), so the
model is built from its config and each layer's query, key, value and attention output Linear
modules are replaced by ones of the kept heads' width (heads x head_dim) before the checkpoint is
loaded, strictly: every tensor must fit. transformers 5's attention reshapes its projections to
(..., -1, head_dim), so a layer runs with the heads its Linear modules hold; the module's
num_attention_heads and all_head_size are set to match all the same.
Development only: run with the virtualenv that has torch and transformers (docs/perf.md).
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file
from transformers import AutoConfig, AutoModelForSequenceClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_train_fixtures  # noqa: E402

CASES = ["prune/bert-pruned", "prune/distilbert-pruned", "prune/roberta-pruned"]


def attention_modules(model, layer):
    """The layer's attention module (its q/k/v Linears) and the module holding its output Linear."""
    body = getattr(model, model.base_model_prefix)
    if model.config.model_type == "distilbert":
        attn = body.transformer.layer[layer].attention
        return attn, [("q_lin", attn), ("k_lin", attn), ("v_lin", attn)], ("out_lin", attn)
    attn = body.encoder.layer[layer].attention
    return attn.self, [("query", attn.self), ("key", attn.self), ("value", attn.self)], ("dense", attn.output)


def pruned_model(src):
    """The checkpoint at src as transformers 4 built it after prune_heads: each layer's Linears
    as wide as its kept heads, the weights loaded strictly."""
    with open(os.path.join(src, "config.json")) as f:
        removed = {int(l): h for l, h in json.load(f)["pruned_heads"].items()}
    config = AutoConfig.from_pretrained(src)
    model = AutoModelForSequenceClassification.from_config(config, attn_implementation="eager")
    C = config.hidden_size
    H = config.num_attention_heads if hasattr(config, "num_attention_heads") else config.n_heads
    D = C // H
    for layer, heads in removed.items():
        kept = H - len(heads)
        self_attn, qkv, (out_name, out_owner) = attention_modules(model, layer)
        for name, owner in qkv:
            setattr(owner, name, torch.nn.Linear(C, kept * D))
        setattr(out_owner, out_name, torch.nn.Linear(kept * D, C))
        for attr, value in (("num_attention_heads", kept), ("n_heads", kept), ("all_head_size", kept * D)):
            if hasattr(self_attn, attr):
                setattr(self_attn, attr, value)
    model.load_state_dict(load_file(os.path.join(src, "model.safetensors")), strict=True)
    return model


if __name__ == "__main__":
    src_root, dst_root = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:]
    torch.manual_seed(0)
    for case in CASES:
        name = os.path.basename(case).replace("-pruned", "-pruned-cls2")
        if wanted and name not in wanted:
            continue
        src = os.path.join(src_root, case)
        make_train_fixtures.run(src, os.path.join(dst_root, name), pruned_model(src))
        print("wrote", os.path.join(dst_root, name))
