#!/usr/bin/env python3
"""Knowledge-distillation references for tach train --distill-from, from transformers + torch.

    scripts/golden/make_distill_golden.py tests/fixtures tests/fixtures/distill

The loss, written in torch as tach defines it (Hinton, Vinyals and Dean 2015; alpha weighs the
teacher's term):

    kd   = T^2 * mean over the counted groups of KL(softmax(teacher / T) || softmax(student / T))
    loss = alpha * kd + (1 - alpha) * the task model's own loss (transformers' labels)

A group is one distribution: a classifier's row; a token's row over its labels (token
classification) or the vocabulary (masked LM), labels -100 left out; question answering's start
logits over a row's tokens, and its end logits (2B groups).

OUT/op.json: the KL op alone on random logits [outer, classes, inner] (softmax over classes), with
and without a -100 mask, at two temperatures: the loss and d loss / d student.

For each case OUT/<case>/ gets, from tiny random models made from the encoder fixtures' configs
(the student with fewer layers, or another family) and saved with save_pretrained:
  teacher/, student/  config.json + model.safetensors
  batches.json        four padded batches: input_ids, attention_mask, token_type_ids (BERT students
                      only: the teacher then reads them too), and labels [B] / [B][T] or
                      start_positions, end_positions [B]
  expected.json       T, alpha; step 0's kd, task and total loss; 20 steps' losses (total, kd,
                      task), learning rates and gradient norms
  final.safetensors   the student's parameters after the 20 steps
The 20 steps: AdamW (lr 1e-3, weight decay 0.01 except biases and LayerNorm weights), linear
schedule with 2 warm-up steps, clipping at 1.0, batch i % 4 at step i, dropout off in both models.
Development only: run with the virtualenv that has torch and transformers.
"""
import json
import os
import re
import shutil
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import (AutoConfig, AutoModelForMaskedLM, AutoModelForQuestionAnswering,
                          AutoModelForSequenceClassification, AutoModelForTokenClassification,
                          get_linear_schedule_with_warmup)

# case -> (teacher config, student config, student layers, task)
CASES = {
    "bert2-bert1-cls3": ("encoders/bert-base-model-f32", "encoders/bert-base-model-f32", 1, "sequence-classification"),
    "bert2-distilbert1-cls3": ("encoders/bert-base-model-f32", "encoders/distilbert-base-model-f32", 1,
                               "sequence-classification"),
    "bert2-distilbert1-token-cls5": ("encoders/bert-base-model-f32", "encoders/distilbert-base-model-f32", 1,
                                     "token-classification"),
    "bert2-bert1-qa": ("encoders/bert-base-model-f32", "encoders/bert-base-model-f32", 1, "question-answering"),
    "bert2-distilbert1-mlm": ("encoders/bert-base-model-f32", "encoders/distilbert-base-model-f32", 1, "mlm"),
}
T_SOFT, ALPHA = 2.5, 0.6
STEPS, WARMUP, LR, WD, CLIP = 20, 2, 1e-3, 0.01, 1.0
LABELS3 = ["negative", "neutral", "positive"]
LABELS5 = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]
NO_DECAY = [re.compile(p) for p in [r"bias", r"layernorm", r"layer_norm", r"(?:^|\.)norm(?:$|\.)"]]


def decays(name):
    return not any(p.search(name.lower()) for p in NO_DECAY)


def kd_loss(student, teacher, T, mask=None):
    """student, teacher: [G, C]; mask: [G] bool (None: every group)."""
    log_q = F.log_softmax(student / T, dim=-1)
    log_p = F.log_softmax(teacher / T, dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1)
    if mask is not None:
        kl = kl[mask]
    return T * T * kl.mean() if kl.numel() else student.sum() * 0


def make_model(src, task, layers, dst, seed, labels):
    config = AutoConfig.from_pretrained(src)
    if layers:
        if config.model_type == "distilbert":
            config.n_layers = layers
        else:
            config.num_hidden_layers = layers
    config.architectures = None
    torch.manual_seed(seed)
    if labels:
        config.id2label = dict(enumerate(labels))
        config.label2id = {l: i for i, l in enumerate(labels)}
    cls = {"sequence-classification": AutoModelForSequenceClassification, "token-classification":
           AutoModelForTokenClassification, "question-answering": AutoModelForQuestionAnswering,
           "mlm": AutoModelForMaskedLM}[task]
    model = cls.from_config(config, attn_implementation="eager").float()
    shutil.rmtree(dst, ignore_errors=True)
    model.save_pretrained(dst)
    model.eval()  # dropout off; gradients still flow
    return model


def batches(vocab, task, gen, pad_id=0):
    out = []
    for i in range(4):
        B, T = 3, 8 + i
        ids = torch.randint(6, vocab, (B, T), generator=gen)
        mask = torch.ones(B, T, dtype=torch.long)
        lengths = []
        for r in range(B):  # right padding of different lengths; row 0 is full
            n = T if r == 0 else T - (r * 2 + i) % (T - 3)
            lengths.append(n)
            mask[r, n:] = 0
            ids[r, n:] = pad_id
            ids[r, 0], ids[r, n - 1] = 1, 2  # [CLS], [SEP]
        special = (torch.arange(T).unsqueeze(0) >= torch.tensor(lengths).unsqueeze(1)) | (torch.arange(T) == 0)
        for r, n in enumerate(lengths):
            special[r, n - 1] = True
        b = {"input_ids": ids, "attention_mask": mask, "token_type_ids": (torch.arange(T).unsqueeze(0) >= T // 2).long() * mask}
        if task == "sequence-classification":
            b["labels"] = torch.randint(0, len(LABELS3), (B,), generator=gen)
            if i == 1:
                b["labels"][2] = -100  # ignored by the task loss; the teacher still teaches on the row
        elif task == "token-classification":
            labels = torch.randint(0, len(LABELS5), (B, T), generator=gen)
            later = torch.rand(B, T, generator=gen) < 0.3
            labels[special | later] = -100
            b["labels"] = labels
        elif task == "mlm":
            while True:
                chosen = (torch.rand(B, T, generator=gen) < 0.25) & ~special
                if chosen.any():
                    break
            labels = torch.where(chosen, ids, torch.full_like(ids, -100))
            b["input_ids"] = torch.where(chosen, torch.full_like(ids, 3), ids)  # 3: the mask token
            b["labels"] = labels
        else:
            start = torch.tensor([int(torch.randint(1, n - 1, (1,), generator=gen)) for n in lengths])
            end = torch.minimum(start + torch.randint(0, 3, (B,), generator=gen), torch.tensor(lengths) - 2)
            start[1], end[1] = 0, 0
            b["start_positions"], b["end_positions"] = start, end
        out.append(b)
    return out


def task_groups(task, logits, b):
    """The student's or teacher's output as [G, C] groups, and the mask of those that count."""
    if task == "sequence-classification":
        return logits.logits, None
    if task == "question-answering":
        return torch.cat([logits.start_logits, logits.end_logits], 0), None
    flat = logits.logits.reshape(-1, logits.logits.shape[-1])
    return flat, (b["labels"].reshape(-1) != -100)


def run(fixtures, name, dst):
    t_src, s_src, s_layers, task = CASES[name]
    labels = LABELS3 if task == "sequence-classification" else LABELS5 if task == "token-classification" else None
    teacher = make_model(os.path.join(fixtures, t_src), task, 0, os.path.join(dst, "teacher"), 11, labels)
    student = make_model(os.path.join(fixtures, s_src), task, s_layers, os.path.join(dst, "student"), 7, labels)
    assert teacher.config.vocab_size == student.config.vocab_size
    types = student.config.model_type == "bert"
    gen = torch.Generator().manual_seed(4321)
    bs = batches(student.config.vocab_size, task, gen)

    def inputs(b):
        kw = {"input_ids": b["input_ids"], "attention_mask": b["attention_mask"]}
        if types:
            kw["token_type_ids"] = b["token_type_ids"]
        return kw

    def loss_of(b):
        kw = inputs(b)
        with torch.no_grad():
            t_out = teacher(**kw)
        for k in ("labels", "start_positions", "end_positions"):
            if k in b:
                kw[k] = b[k]
        s_out = student(**kw)
        s_groups, mask = task_groups(task, s_out, b)
        t_groups, _ = task_groups(task, t_out, b)
        kd = kd_loss(s_groups, t_groups, T_SOFT, mask)
        return ALPHA * kd + (1 - ALPHA) * s_out.loss, kd, s_out.loss

    loss0, kd0, task0 = loss_of(bs[0])
    decay = [p for n, p in student.named_parameters() if decays(n)]
    no_decay = [p for n, p in student.named_parameters() if not decays(n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD}, {"params": no_decay, "weight_decay": 0.0}], lr=LR)
    sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
    losses, kds, tasks, lrs, norms = [], [], [], [], []
    for step in range(STEPS):
        lrs.append(sched.get_last_lr()[0])
        loss, kd, tl = loss_of(bs[step % 4])
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(student.parameters(), CLIP)))
        opt.step()
        sched.step()
        opt.zero_grad()
        losses.append(loss.item()), kds.append(kd.item()), tasks.append(tl.item())
    final = {n: p.detach().clone().contiguous() for n, p in student.named_parameters()}
    save_file(final, os.path.join(dst, "final.safetensors"))
    with open(os.path.join(dst, "batches.json"), "w") as f:
        keep = [{k: v.tolist() for k, v in b.items() if k != "token_type_ids" or types} for b in bs]
        json.dump(keep, f)
    with open(os.path.join(dst, "expected.json"), "w") as f:
        json.dump({"task": task, "temperature": T_SOFT, "alpha": ALPHA, "loss0": loss0.item(), "kd0": kd0.item(),
                   "task0": task0.item(), "losses": losses, "kd_losses": kds, "task_losses": tasks, "lrs": lrs,
                   "grad_norms": norms, "steps": STEPS, "warmup": WARMUP, "lr": LR, "weight_decay": WD,
                   "clip": CLIP, "torch": torch.__version__}, f, indent=1)


def op_cases(dst):
    gen = torch.Generator().manual_seed(99)
    cases = []
    for outer, classes, inner, masked, T in [(3, 5, 1, False, 1.0), (4, 7, 1, True, 2.0), (2, 6, 2, False, 3.0),
                                             (5, 33, 1, True, 0.5)]:
        s = (torch.randn(outer, classes, inner, generator=gen, dtype=torch.float64) * 3).float()
        t = (torch.randn(outer, classes, inner, generator=gen, dtype=torch.float64) * 3).float()
        labels = torch.zeros(outer * inner, dtype=torch.long)
        if masked:
            labels[1::2] = -100
        sd = s.double().requires_grad_(True)
        groups_s = sd.permute(0, 2, 1).reshape(outer * inner, classes)
        groups_t = t.double().permute(0, 2, 1).reshape(outer * inner, classes)
        loss = kd_loss(groups_s, groups_t, T, (labels != -100) if masked else None)
        loss.backward()
        cases.append({"outer": outer, "classes": classes, "inner": inner, "temperature": T,
                      "student": s.flatten().tolist(), "teacher": t.flatten().tolist(),
                      "labels": labels.tolist() if masked else None, "loss": loss.item(),
                      "grad": sd.grad.flatten().tolist()})
    with open(os.path.join(dst, "op.json"), "w") as f:
        json.dump({"cases": cases, "reference": "torch, in float64 from the f32 inputs"}, f)


def main():
    fixtures, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    op_cases(out)
    for name in (sys.argv[3:] or CASES):
        run(fixtures, name, os.path.join(out, name))
        print("wrote", os.path.join(out, name))


if __name__ == "__main__":
    main()
