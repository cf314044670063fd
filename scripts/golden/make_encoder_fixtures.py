#!/usr/bin/env python3
"""Writes tiny BERT, DistilBERT, RoBERTa, XLM-RoBERTa and MPNet models with transformers' own
save_pretrained, plus the logits (or last_hidden_state) transformers computes for a fixed padded
batch. RoBERTa's rows hold its pad id once inside a row too: transformers gives that token the
padding position (position ids follow the ids, not the mask), and tach must as well.

    scripts/golden/make_encoder_fixtures.py tests/fixtures/encoders          # small, committed
    scripts/golden/make_encoder_fixtures.py --base build/golden              # DistilBERT-base size, not committed

Reference tools are for development only: run with the virtualenv that has torch and
transformers (see docs/perf.md). Expected values are computed in float32 from the weights as
stored (f16/bf16 weights are upcast exactly), which is what tach must reproduce.
"""
import argparse
import json
import os
import sys

import torch
from transformers import (MPNetConfig, MPNetForSequenceClassification, MPNetModel, BertConfig, BertForSequenceClassification, BertModel, DistilBertConfig,
                          DistilBertForSequenceClassification, DistilBertModel, RobertaConfig,
                          RobertaForSequenceClassification, RobertaModel, XLMRobertaConfig,
                          XLMRobertaForSequenceClassification, XLMRobertaModel)

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def tiny_bert(num_labels, **kw):
    return BertConfig(vocab_size=120, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=40, max_position_embeddings=32, type_vocab_size=2,
                      initializer_range=0.2, num_labels=num_labels, **kw)


def tiny_distilbert(num_labels, **kw):
    return DistilBertConfig(vocab_size=120, dim=16, n_layers=2, n_heads=4, hidden_dim=40,
                            max_position_embeddings=32, initializer_range=0.2, num_labels=num_labels, **kw)


def tiny_roberta(config_cls, num_labels, **kw):
    # Positions start after padding_idx (1): 32 positions hold rows of 29 tokens.
    return config_cls(vocab_size=120, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=40, max_position_embeddings=32, type_vocab_size=1, pad_token_id=1,
                      bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, initializer_range=0.2,
                      num_labels=num_labels, **kw)


def tiny_mpnet(num_labels, **kw):
    # RoBERTa's positions (after padding_idx 1) and a relative position bias of 32 buckets.
    return MPNetConfig(vocab_size=120, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=40, max_position_embeddings=32, pad_token_id=1, bos_token_id=0,
                       eos_token_id=2, layer_norm_eps=1e-5, initializer_range=0.2, num_labels=num_labels, **kw)


# name, config, model class, stored dtype, uses token_type_ids
CASES = [
    ("bert-cls2-f32", lambda: tiny_bert(2), BertForSequenceClassification, "f32", True),
    ("bert-cls3-f16", lambda: tiny_bert(3, id2label={0: "neg", 1: "neu", 2: "pos"},
                                        label2id={"neg": 0, "neu": 1, "pos": 2}),
     BertForSequenceClassification, "f16", True),
    ("bert-reg1-bf16", lambda: tiny_bert(1, problem_type="regression"), BertForSequenceClassification, "bf16", False),
    ("bert-base-model-f32", lambda: tiny_bert(2), BertModel, "f32", True),
    ("distilbert-cls2-f32", lambda: tiny_distilbert(2), DistilBertForSequenceClassification, "f32", False),
    ("distilbert-cls3-bf16", lambda: tiny_distilbert(3), DistilBertForSequenceClassification, "bf16", False),
    ("distilbert-cls1-f16", lambda: tiny_distilbert(1), DistilBertForSequenceClassification, "f16", False),
    ("distilbert-base-model-f32", lambda: tiny_distilbert(2), DistilBertModel, "f32", False),
    ("roberta-cls2-f32", lambda: tiny_roberta(RobertaConfig, 2), RobertaForSequenceClassification, "f32", False),
    ("roberta-base-model-f32", lambda: tiny_roberta(RobertaConfig, 2), RobertaModel, "f32", False),
    ("xlm-roberta-cls3-bf16", lambda: tiny_roberta(XLMRobertaConfig, 3), XLMRobertaForSequenceClassification, "bf16",
     False),
    ("xlm-roberta-base-model-f32", lambda: tiny_roberta(XLMRobertaConfig, 2), XLMRobertaModel, "f32", False),
    ("mpnet-cls2-f32", lambda: tiny_mpnet(2), MPNetForSequenceClassification, "f32", False),
    ("mpnet-base-model-f32", lambda: tiny_mpnet(2), MPNetModel, "f32", False),
]

# Rows of different lengths (padded on the right with 0), so the attention mask matters.
ROWS = [
    [101, 7, 19, 33, 54, 102],
    [101, 88, 102],
    [101, 5, 6, 7, 8, 9, 10, 11, 12, 102],
    [101, 119, 3, 102, 40, 41, 102],
]
TYPES = [
    [0, 0, 0, 0, 0, 0],
    [0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
    [0, 0, 0, 0, 1, 1, 1],
]


# RoBERTa's: <s> = 0, </s> = 2, pad = 1 (also once inside the last row).
ROBERTA_ROWS = [
    [0, 7, 19, 33, 54, 2],
    [0, 88, 2],
    [0, 5, 6, 7, 8, 9, 10, 11, 12, 2],
    [0, 119, 3, 2, 2, 40, 1, 41, 2],
]


# MPNet's: RoBERTa's, and a row of 29 tokens, so the relative position bias reaches its
# logarithmic buckets (distances of 8 and more).
MPNET_ROWS = ROBERTA_ROWS[:3] + [[0] + [3 + (7 * i) % 110 for i in range(27)] + [2]]


def padded(rows, pad=0):
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad] * (T - len(r)) for r in rows], dtype=torch.long)
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows], dtype=torch.long)
    return ids, mask


def write_case(out_dir, name, make_config, cls, dtype, use_types, seed):
    torch.manual_seed(seed)
    model = cls(make_config()).eval()
    model = model.to(DTYPES[dtype])
    path = os.path.join(out_dir, name)
    model.save_pretrained(path, safe_serialization=True)
    # Reload as float32 from what was written: the reference for tach.
    ref = cls.from_pretrained(path, torch_dtype=torch.float32).eval()
    roberta = name.startswith(("roberta", "xlm-roberta"))
    rows, pad = (ROBERTA_ROWS, 1) if roberta else (MPNET_ROWS, 1) if name.startswith("mpnet") else (ROWS, 0)
    ids, mask = padded(rows, pad)
    kwargs = {"input_ids": ids, "attention_mask": mask}
    if use_types:
        kwargs["token_type_ids"], _ = padded(TYPES)
    with torch.no_grad():
        out = ref(**kwargs)
    expected = {"input_rows": rows, "token_type_rows": TYPES if use_types else None, "pad_id": pad,
                "weights_dtype": dtype, "architecture": cls.__name__}
    if hasattr(out, "logits"):
        expected["logits"] = out.logits.tolist()
    else:
        # Padded positions carry no meaning; compare real tokens only.
        h = out.last_hidden_state
        expected["last_hidden_state"] = [h[i, :len(r)].tolist() for i, r in enumerate(rows)]
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(f"{path}: {cls.__name__}, weights {dtype}")


def write_base(out_dir, seed):
    """DistilBERT-base sized classifier with random weights: the `slow` golden test."""
    torch.manual_seed(seed)
    cfg = DistilBertConfig(num_labels=2, initializer_range=0.05)
    model = DistilBertForSequenceClassification(cfg).eval()
    path = os.path.join(out_dir, "distilbert-base-random")
    model.save_pretrained(path, safe_serialization=True)
    g = torch.Generator().manual_seed(seed)
    rows = [torch.randint(1000, 30522, (n,), generator=g).tolist() for n in (128, 64, 17)]
    rows = [[101] + r + [102] for r in rows]
    ids, mask = padded(rows)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump({"input_rows": rows, "token_type_rows": None, "pad_id": 0, "weights_dtype": "f32",
                   "architecture": "DistilBertForSequenceClassification", "logits": logits.tolist()}, f)
    print(f"{path}: DistilBERT-base, {sum(p.numel() for p in model.parameters())} parameters")


def write_relative_buckets(out_dir):
    """transformers' MPNet relative position buckets for distances -600..600 (key - query)."""
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder
    distances = torch.arange(-600, 601)
    buckets = MPNetEncoder.relative_position_bucket(distances)
    path = os.path.join(out_dir, "mpnet-relative-buckets.json")
    with open(path, "w") as f:
        json.dump({"first_distance": -600, "buckets": buckets.tolist(), "num_buckets": 32, "max_distance": 128}, f)
    print(f"{path}: buckets for distances -600..600")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--base", action="store_true", help="write the DistilBERT-base sized model instead")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    if args.base:
        write_base(args.out_dir, args.seed)
        return
    if not args.only or "mpnet-relative-buckets" in args.only.split(","):
        write_relative_buckets(args.out_dir)
    for i, (name, make_config, cls, dtype, use_types) in enumerate(CASES):
        if args.only and name not in args.only.split(","):
            continue
        write_case(args.out_dir, name, make_config, cls, dtype, use_types, args.seed + i)


if __name__ == "__main__":
    sys.exit(main())
