#!/usr/bin/env python3
"""LoRA references for the per-token heads (masked LM, token classification, question answering),
from peft + transformers + torch.optim.AdamW.

    scripts/golden/make_task_lora_golden.py tests/fixtures/train_tasks tests/fixtures/train_tasks_lora [CASE ...]

For each case of TASKS/ (the task models and batches scripts/golden/make_train_task_golden.py
wrote), OUT/<case>/ gets:
  adapter_init/       the adapter before training, as peft's save_pretrained writes it: LoRA on
                      tach's default targets (every linear of the layers by PEFT's name, which
                      also matches the masked-LM head's `dense`), r 4, alpha 8, PEFT's task type
                      (TOKEN_CLS, QUESTION_ANS; none for the masked LM) and so its default
                      modules_to_save (classifier,score; qa_outputs; none), ModernBERT's
                      question-answering `classifier` named besides. lora_A and lora_B are
                      drawn N(0, 0.2) so that both get gradients (peft's own init has B = 0).
  expected.json       options, the loss on batch 0, and 20 steps' losses, learning rates, norms
  grads.safetensors   the trainable parameters' gradients on batch 0 (dropout off), tach's names
  final.safetensors   the trainable parameters after 20 AdamW steps, tach's names
The steps: AdamW lr 1e-3, weight decay 0.01 (Trainer's grouping), linear schedule with 2 warm-up
steps of 20, clipping at 1.0 over the trainable parameters, batch i % 4 at step i; the masked LM
takes the batches' masked inputs and labels as they are (tach draws its own masks in a run).
Development only: run with the virtualenv that has torch, transformers and peft.
"""
import json
import os
import re
import shutil
import sys

import peft
import torch
import transformers
from peft import LoraConfig, TaskType, get_peft_model
from safetensors.torch import save_file
from transformers import (AutoModelForMaskedLM, AutoModelForQuestionAnswering, AutoModelForTokenClassification,
                          get_linear_schedule_with_warmup)

DECODER_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# The families' default LoRA targets (src/model/<family>.cc lora_targets).
TARGETS = {
    "bert": ["query", "key", "value", "dense"],
    "distilbert": ["q_lin", "k_lin", "v_lin", "out_lin", "lin1", "lin2"],
    "roberta": ["query", "key", "value", "dense"],
    "xlm-roberta": ["query", "key", "value", "dense"],
    "mpnet": ["q", "k", "v", "o", "dense"],
    "modernbert": ["Wqkv", "Wo", "Wi", "dense"],
    "llama": DECODER_TARGETS,
    "mistral": DECODER_TARGETS,
    "qwen2": DECODER_TARGETS,
    "qwen3": DECODER_TARGETS,
}
CASES = ["bert-mlm-f32", "distilbert-mlm-f32", "roberta-mlm-f32", "mpnet-mlm-f32", "xlm-roberta-mlm-f32",
         "bert-token-cls5-f32", "distilbert-token-cls5-f32", "xlm-roberta-token-cls5-f32", "bert-qa-f32",
         "distilbert-qa-f32", "roberta-qa-f32", "mpnet-qa-f32", "modernbert-mlm-f32", "modernbert-token-cls5-f32",
         "modernbert-qa-f32", "llama-token-cls5-f32", "llama-qa-f32", "mistral-token-cls5-f32", "mistral-qa-f32",
         "qwen2-qa-f32", "qwen3-token-cls5-f32", "roberta-token-cls5-f32", "mpnet-token-cls5-f32", "xlm-roberta-qa-f32",
         "qwen2-token-cls5-f32", "qwen3-qa-f32"]
R, ALPHA, STEPS, WARMUP, LR, WD, CLIP = 4, 8, 20, 2, 1e-3, 0.01, 1.0
NO_DECAY = [re.compile(p) for p in [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]]
AUTO = {"mlm": AutoModelForMaskedLM, "token-classification": AutoModelForTokenClassification,
        "question-answering": AutoModelForQuestionAnswering}
TASK_TYPE = {"mlm": None, "token-classification": TaskType.TOKEN_CLS, "question-answering": TaskType.QUESTION_ANS}
# A family whose question-answering head is not named qa_outputs (ModernBERT's `classifier`) names
# it in modules_to_save, as tach train does; peft adds its qa_outputs to the list.
QA_HEAD = {"modernbert": "classifier"}


def tach_name(n):
    return n.replace("base_model.model.", "").replace(".default", "").replace(".modules_to_save", "")


def model_inputs(b, has_types, with_targets):
    kw = {k: torch.tensor(b[k]) for k in ("input_ids", "attention_mask")}
    if has_types:
        kw["token_type_ids"] = torch.tensor(b["token_type_ids"])
    if with_targets:
        for k in ("labels", "start_positions", "end_positions"):
            if k in b:
                kw[k] = torch.tensor(b[k])
    return kw


def run(case, tasks, dst):
    task = json.load(open(os.path.join(tasks, case, "expected.json")))["task"]
    model = AUTO[task].from_pretrained(os.path.join(tasks, case, "model"), attn_implementation="eager").float()
    targets = TARGETS[model.config.model_type]
    to_save = None
    if task == "question-answering" and model.config.model_type in QA_HEAD:
        to_save = [QA_HEAD[model.config.model_type]]
    pm = get_peft_model(model, LoraConfig(r=R, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=targets,
                                          task_type=TASK_TYPE[task], modules_to_save=to_save))
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_" in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
    shutil.rmtree(os.path.join(dst, "adapter_init"), ignore_errors=True)
    pm.save_pretrained(os.path.join(dst, "adapter_init"))
    pm.eval()  # dropout off; gradients still flow
    has_types = model.config.model_type == "bert"
    bs = json.load(open(os.path.join(tasks, case, "batches.json")))

    # Through the LoRA model under peft's wrapper: PeftModelForQuestionAnswering.forward (peft
    # 0.21) drops token_type_ids, so BERT's second segment would read as the first; the model
    # itself takes them, as transformers' BertForQuestionAnswering and tach do.
    def forward(b):
        return pm.base_model(**model_inputs(b, has_types, True)).loss

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
        json.dump({"task": task, "r": R, "lora_alpha": ALPHA, "target_modules": targets,
                   "modules_to_save": pm.peft_config["default"].modules_to_save or [], "loss0": loss0.item(), "losses": losses, "lrs": lrs,
                   "grad_norms": norms, "steps": STEPS, "warmup": WARMUP, "lr": LR, "weight_decay": WD,
                   "clip": CLIP, "torch": torch.__version__, "transformers": transformers.__version__,
                   "peft": peft.__version__, "trainable": [tach_name(n) for n, _ in trainable]}, f, indent=1)
    save_file(grads, os.path.join(dst, "grads.safetensors"))
    save_file({tach_name(n): p.detach().clone().contiguous() for n, p in trainable},
              os.path.join(dst, "final.safetensors"))


def main():
    tasks, out = sys.argv[1], sys.argv[2]
    for case in sys.argv[3:] or CASES:
        dst = os.path.join(out, case)
        os.makedirs(dst, exist_ok=True)
        run(case, tasks, dst)
        print("wrote", dst)


if __name__ == "__main__":
    main()
