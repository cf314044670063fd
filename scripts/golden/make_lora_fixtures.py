#!/usr/bin/env python3
"""LoRA references for tach's adapters, from peft + transformers + torch.optim.AdamW.

    scripts/golden/make_lora_fixtures.py tests/fixtures tests/fixtures/lora [CASE ...]

For each case, on the batches of tests/fixtures/train/<model>/batches.json, writes OUT/<case>/:
  adapter_init/       the adapter before training, as peft's save_pretrained writes it
                      (adapter_config.json, adapter_model.safetensors); lora_A and lora_B are
                      drawn N(0, 0.2) so that both get gradients (peft's own init has B = 0)
  expected.json       options, the loss on batch 0, and 20 steps' losses, learning rates, norms
  grads.safetensors   the trainable parameters' gradients on batch 0 (dropout off), tach's names
  final.safetensors   the trainable parameters after 20 AdamW steps, tach's names
The steps: AdamW lr 1e-3, weight decay 0.01 (Trainer's grouping), linear schedule with 2 warm-up
steps of 20, clipping at 1.0 over the trainable parameters, batch i % 4 at step i.
Development only: run with the virtualenv that has torch, transformers and peft.
"""
import json
import os
import re
import sys

import torch
from peft import LoraConfig, get_peft_model
from safetensors.torch import save_file
from transformers import AutoModelForSequenceClassification, get_linear_schedule_with_warmup

CASES = {
    "distilbert-cls2-f32": ("encoders/distilbert-cls2-f32", ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"]),
    "bert-cls2-f32": ("encoders/bert-cls2-f32", ["query", "key", "value", "dense"]),
    # RoBERTa's classifier.dense is a "dense" too, but inside the head that modules_to_save trains whole.
    "roberta-cls2-f32": ("encoders/roberta-cls2-f32", ["query", "key", "value", "dense"]),
    # MPNet's: attention.attn.q/k/v/o, and "dense" for the FFN (classifier.dense trains whole).
    "mpnet-cls2-f32": ("encoders/mpnet-cls2-f32", ["q", "k", "v", "o", "dense"]),
    # ModernBERT: the fused Wqkv and Wi, both Wo, and head.dense (outside modules_to_save, which is
    # the classifier alone: head.norm stays frozen).
    "modernbert-cls-mean-f32": ("decoders/modernbert-cls-mean-f32", ["Wqkv", "Wo", "Wi", "dense"]),
    "qwen2-cls-kv1-f32": ("decoders/qwen2-cls-kv1-f32",
                          ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    "llama-cls-bias-f32": ("decoders/llama-cls-bias-f32",
                           ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    "gemma3-cls-f32": ("decoders/gemma3-cls-f32",
                       ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
}
R, ALPHA, STEPS, WARMUP, LR, WD, CLIP = 4, 8, 20, 2, 1e-3, 0.01, 1.0
NO_DECAY = [re.compile(p) for p in [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]]


def tach_name(n):
    return n.replace("base_model.model.", "").replace(".default", "").replace(".modules_to_save", "")


def run(name, src, targets, dst, batches_path):
    model = AutoModelForSequenceClassification.from_pretrained(src, attn_implementation="eager").float()
    pm = get_peft_model(model, LoraConfig(r=R, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=targets,
                                          task_type="SEQ_CLS"))
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    pm.save_pretrained(os.path.join(dst, "adapter_init"))
    pm.eval()  # dropout off; gradients still flow
    has_types = model.config.model_type == "bert"
    bs = json.load(open(batches_path))

    def forward(b):
        kw = {k: torch.tensor(b[k]) for k in ("input_ids", "attention_mask")}
        if has_types:
            kw["token_type_ids"] = torch.tensor(b["token_type_ids"])
        kw["labels"] = torch.tensor(b["labels"])
        return pm(**kw).loss

    trainable = [(n, p) for n, p in pm.named_parameters() if p.requires_grad]
    loss0 = forward(bs[0])
    loss0.backward()
    grads = {tach_name(n): p.grad.detach().clone().contiguous() for n, p in trainable}
    pm.zero_grad()
    decay = [p for n, p in trainable if not any(r.search(tach_name(n).lower()) for r in NO_DECAY)]
    no_decay = [p for n, p in trainable if any(r.search(tach_name(n).lower()) for r in NO_DECAY)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}], lr=LR)
    sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
    losses, lrs, norms = [], [], []
    for step in range(STEPS):
        lrs.append(sched.get_last_lr()[0])
        loss = forward(bs[step % 4])
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_([p for _, p in trainable], CLIP)))
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())
    with open(os.path.join(dst, "expected.json"), "w") as f:
        json.dump({"model": src, "batches": os.path.relpath(batches_path, os.path.dirname(os.path.dirname(dst))),
                   "r": R, "lora_alpha": ALPHA, "target_modules": targets, "modules_to_save": ["classifier", "score"],
                   "loss0": loss0.item(), "losses": losses, "lrs": lrs, "grad_norms": norms, "steps": STEPS,
                   "warmup": WARMUP, "lr": LR, "weight_decay": WD, "clip": CLIP, "torch": torch.__version__,
                   "trainable": [tach_name(n) for n, _ in trainable]}, f, indent=1)
    save_file(grads, os.path.join(dst, "grads.safetensors"))
    save_file({tach_name(n): p.detach().clone().contiguous() for n, p in trainable},
              os.path.join(dst, "final.safetensors"))


if __name__ == "__main__":
    src_root, dst_root = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:]  # case names (default: all)
    torch.manual_seed(0)
    for case, (model, targets) in CASES.items():
        if wanted and case not in wanted:
            continue
        dst = os.path.join(dst_root, case)
        os.makedirs(dst, exist_ok=True)
        run(case, os.path.join(src_root, model), targets, dst, os.path.join(src_root, "train", case, "batches.json"))
        print("wrote", dst)
