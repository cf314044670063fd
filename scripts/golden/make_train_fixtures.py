#!/usr/bin/env python3
"""Training references for tach's backward and optimizer, from transformers + torch.optim.AdamW.

    scripts/golden/make_train_fixtures.py tests/fixtures tests/fixtures/train [CASE ...]

For each tiny encoder and decoder classifier fixture (or the CASEs named), writes OUT/<case>/:
  batches.json        four padded batches (input_ids, attention_mask, token_type_ids, labels)
  expected.json       the loss on batch 0, and the per-step losses and learning rates of 20 steps
  grads.safetensors   every parameter's gradient on batch 0 (dropout off), under its HF name
  final.safetensors   every parameter after the 20 steps
  grads_bf16.safetensors, bf16.json   the same gradient and loss under torch.autocast("cpu",
                      dtype=torch.bfloat16): bf16 mixed precision, for tach train --dtype bf16

The 20 steps: AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01 except biases and
LayerNorm/RMSNorm weights, as the Trainer's get_decay_parameter_names groups them), get_linear_schedule_with_warmup with 2 warm-up
steps of 20, clipping at global norm 1.0, batch i % 4 at step i, dropout off.
Development only: run with the virtualenv that has torch and transformers (docs/perf.md).
"""
import json
import os
import re
import sys

import torch
from safetensors.torch import save_file
from transformers import AutoModelForSequenceClassification, get_linear_schedule_with_warmup

CASES = ["encoders/bert-cls2-f32", "encoders/distilbert-cls2-f32", "encoders/bert-reg1-bf16", "encoders/bert-cls3-f16",
         "encoders/roberta-cls2-f32", "encoders/xlm-roberta-cls3-bf16", "encoders/mpnet-cls2-f32",
         "decoders/qwen2-cls-kv1-f32", "decoders/qwen2-cls-kv2-bf16", "decoders/llama-cls-bias-f32",
         "decoders/mistral-cls-window4-f32", "decoders/qwen3-cls-headdim16-f32", "decoders/gemma3-cls-f32",
         "decoders/modernbert-cls-mean-f32", "decoders/modernbert-cls-bias-bf16"]
# transformers.Trainer.get_decay_parameter_names: no decay for these (lower-cased) name patterns.
NO_DECAY = [re.compile(p) for p in [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]]


def decays(name):
    return not any(p.search(name.lower()) for p in NO_DECAY)
STEPS, WARMUP, LR, WD, CLIP = 20, 2, 1e-3, 0.01, 1.0


def batches(config, num_labels, regression, gen):
    out = []
    for i in range(4):
        B, T = 3, 7 + i
        ids = torch.randint(1, config.vocab_size, (B, T), generator=gen)
        mask = torch.ones(B, T, dtype=torch.long)
        for r in range(1, B):  # right padding of different lengths; row 0 is full
            n = T - (r * 2 + i) % (T - 2)
            mask[r, n:] = 0
            ids[r, n:] = config.pad_token_id
        types = (torch.arange(T).unsqueeze(0) >= T // 2).long() * mask
        if regression:
            labels = torch.randn(B, generator=gen)
        else:
            labels = torch.randint(0, num_labels, (B,), generator=gen)
        out.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "labels": labels})
    return out


def run(src, dst, model=None):
    """Writes the references for the checkpoint at src (or `model`, built from it by the caller) to dst."""
    if model is None:
        model = AutoModelForSequenceClassification.from_pretrained(src, attn_implementation="eager")
    model = model.float()
    model.eval()  # dropout off; gradients still flow
    cfg = model.config
    has_types = cfg.model_type == "bert"
    regression = cfg.num_labels == 1
    gen = torch.Generator().manual_seed(1234)
    bs = batches(cfg, cfg.num_labels, regression, gen)

    def forward(b):
        kw = {"input_ids": b["input_ids"], "attention_mask": b["attention_mask"], "labels": b["labels"]}
        if has_types:
            kw["token_type_ids"] = b["token_type_ids"]
        return model(**kw).loss

    loss0 = forward(bs[0])
    loss0.backward()
    grads = {n: p.grad.detach().clone().contiguous() for n, p in model.named_parameters()}
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss_bf16 = forward(bs[0])
    loss_bf16.backward()
    grads_bf16 = {n: p.grad.detach().float().clone().contiguous() for n, p in model.named_parameters()}
    model.zero_grad()

    decay = [p for n, p in model.named_parameters() if decays(n)]
    no_decay = [p for n, p in model.named_parameters() if not decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}], lr=LR)
    sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
    losses, lrs, norms = [], [], []
    for step in range(STEPS):
        lrs.append(sched.get_last_lr()[0])
        loss = forward(bs[step % 4])
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item())

    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "batches.json"), "w") as f:
        json.dump([{k: v.tolist() for k, v in b.items() if has_types or k != "token_type_ids"} for b in bs], f)
    with open(os.path.join(dst, "expected.json"), "w") as f:
        json.dump({"model": os.path.relpath(src, os.path.dirname(os.path.dirname(src))), "loss0": loss0.item(), "losses": losses, "lrs": lrs,
                   "grad_norms": norms, "steps": STEPS, "warmup": WARMUP, "lr": LR, "weight_decay": WD,
                   "clip": CLIP, "torch": torch.__version__}, f, indent=1)
    save_file(grads, os.path.join(dst, "grads.safetensors"))
    save_file(grads_bf16, os.path.join(dst, "grads_bf16.safetensors"))
    with open(os.path.join(dst, "bf16.json"), "w") as f:
        json.dump({"loss0": loss_bf16.item(), "autocast": "cpu bfloat16", "torch": torch.__version__}, f, indent=1)
    save_file({n: p.detach().clone().contiguous() for n, p in model.named_parameters()},
              os.path.join(dst, "final.safetensors"))


if __name__ == "__main__":
    src_root, dst_root = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:]
    torch.manual_seed(0)
    for case in CASES:
        name = os.path.basename(case)
        if wanted and name not in wanted:
            continue
        run(os.path.join(src_root, case), os.path.join(dst_root, name))
        print("wrote", os.path.join(dst_root, name))
