#!/usr/bin/env python3
"""Trains a tiny DistilBERT sentiment classifier on SST-2 (../shared/data/sst2/train.tsv) and
saves it with transformers' save_pretrained, so that tach's accuracy pass has a real model with
real (better than chance) accuracy to check against transformers.

The model is small on purpose (dim 8, one layer: ~0.25M parameters, ~0.5 MB in bf16) so that it
can live in tests/fixtures/. expected.json holds transformers' predictions and accuracy on the
SST-2 dev split (872 sentences), tokenized by the bert-base-uncased tokenizer in ../shared.

Usage: make_sst2_fixture.py OUT_DIR [--shared ../shared]  (development only; needs torch, transformers)
"""
import argparse
import csv
import json
import os
import random

import torch
from transformers import DistilBertConfig, DistilBertForSequenceClassification, PreTrainedTokenizerFast


def read_tsv(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    return [(r[0], int(r[1])) for r in rows[1:]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    torch.manual_seed(0)
    random.seed(0)
    torch.set_num_threads(os.cpu_count())

    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(args.shared, "tokenizers/bert-base-uncased/tokenizer.json"))
    tok.pad_token = "[PAD]"
    train = read_tsv(os.path.join(args.shared, "data/sst2/train.tsv"))
    dev = read_tsv(os.path.join(args.shared, "data/sst2/dev.tsv"))

    config = DistilBertConfig(vocab_size=30522, dim=8, n_layers=1, n_heads=2, hidden_dim=16,
                              max_position_embeddings=128, id2label={0: "negative", 1: "positive"},
                              label2id={"negative": 0, "positive": 1}, dropout=0.0, attention_dropout=0.0,
                              seq_classif_dropout=0.0)
    model = DistilBertForSequenceClassification(config)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.0)
    model.train()
    for epoch in range(args.epochs):
        random.shuffle(train)
        total = 0.0
        for i in range(0, len(train), 64):
            chunk = train[i:i + 64]
            enc = tok([t for t, _ in chunk], padding=True, truncation=True, max_length=args.max_length,
                      return_tensors="pt")
            out = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                        labels=torch.tensor([l for _, l in chunk]))
            opt.zero_grad()
            out.loss.backward()
            opt.step()
            total += out.loss.item() * len(chunk)
        print(f"epoch {epoch}: mean loss {total / len(train):.4f}")

    model = model.to(torch.bfloat16)
    model.save_pretrained(args.out, safe_serialization=True)
    # The reference: the saved bf16 weights loaded in f32, as tach computes.
    ref = DistilBertForSequenceClassification.from_pretrained(args.out, torch_dtype=torch.float32).eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(dev), 32):
            chunk = dev[i:i + 32]
            enc = tok([t for t, _ in chunk], padding=True, truncation=True, max_length=128, return_tensors="pt")
            logits = ref(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
            preds += logits.argmax(-1).tolist()
    correct = sum(int(p == l) for p, (_, l) in zip(preds, dev))
    expected = {"dataset": "sst2/dev.tsv", "examples": len(dev), "accuracy": correct / len(dev),
                "predictions": preds, "max_length": 128,
                "note": "transformers' predictions with the saved bf16 weights computed in f32"}
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f)
    print(f"dev accuracy {correct / len(dev):.4f} ({correct}/{len(dev)})")


if __name__ == "__main__":
    main()
