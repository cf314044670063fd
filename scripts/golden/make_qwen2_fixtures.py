#!/usr/bin/env python3
"""Writes tiny Qwen2 models with transformers' own save_pretrained, and what transformers
computes with them: classifier logits for right- and left-padded batches, vocabulary logits,
and the greedy tokens of generate(do_sample=False).

    scripts/golden/make_qwen2_fixtures.py tests/fixtures/decoders [--shared ../shared]
    scripts/golden/make_qwen2_fixtures.py --base build/golden     # Qwen2.5-0.5B sized, f32 and bf16, not committed

Development only (torch, transformers). References are computed in float32 from the weights as
stored, with eager attention. The configs name no eos token, so generation runs its full length
in both tools.
"""
import argparse
import json
import os
import sys

import torch
from transformers import (PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM,
                          Qwen2ForSequenceClassification)

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
PAD = 0
ROWS = [[5, 17, 33, 41, 60, 7], [9, 88, 3], [12, 5, 6, 7, 8, 9, 10, 11, 250, 13], [200, 119, 3, 40]]
NEW_TOKENS = 8


def tiny(kv, **kw):
    base = dict(vocab_size=256, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=kv, max_position_embeddings=64, rms_norm_eps=1e-6, initializer_range=0.2,
                pad_token_id=PAD, eos_token_id=None, bos_token_id=None)
    base.update(kw)
    return Qwen2Config(**base)


# name, config, class, stored dtype
CASES = [
    ("qwen2-cls-kv1-f32", lambda: tiny(1, num_labels=3, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
     Qwen2ForSequenceClassification, "f32"),
    ("qwen2-cls-kv2-bf16", lambda: tiny(2, num_labels=5, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
     Qwen2ForSequenceClassification, "bf16"),
    ("qwen2-lm-kv4-untied-f32", lambda: tiny(4, tie_word_embeddings=False), Qwen2ForCausalLM, "f32"),
    ("qwen2-lm-kv2-tied-f16", lambda: tiny(2, tie_word_embeddings=True), Qwen2ForCausalLM, "f16"),
    ("qwen2-lm-rope-linear-f32",
     lambda: tiny(2, tie_word_embeddings=True,
                  rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}),
     Qwen2ForCausalLM, "f32"),
    # Dynamic NTK scaling matters past max_position_embeddings: 8 here, and rows of up to 10.
    ("qwen2-lm-rope-dynamic-f32",
     lambda: tiny(2, tie_word_embeddings=True, max_position_embeddings=8,
                  rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0}),
     Qwen2ForCausalLM, "f32"),
]


def pad(rows, side):
    T = max(len(r) for r in rows)
    ids, mask = [], []
    for r in rows:
        fill = [PAD] * (T - len(r))
        ids.append(fill + r if side == "left" else r + fill)
        mask.append([0] * (T - len(r)) + [1] * len(r) if side == "left" else [1] * len(r) + [0] * (T - len(r)))
    return torch.tensor(ids), torch.tensor(mask)


def reference(cls, path):
    return cls.from_pretrained(path, torch_dtype=torch.float32, attn_implementation="eager").eval()


def expectations(ref, cls, rows, pad_id):
    e = {}
    with torch.no_grad():
        for side in ("right", "left"):
            ids, mask = pad(rows, side)
            out = ref(input_ids=ids, attention_mask=mask)
            if cls is Qwen2ForSequenceClassification:
                e[f"logits_{side}"] = out.logits.tolist()
            elif side == "right":
                # Vocabulary logits at real positions only (padding carries no meaning).
                e["lm_logits_right"] = [out.logits[i, :len(r)].tolist() for i, r in enumerate(rows)]
        if cls is Qwen2ForCausalLM:
            ids, mask = pad(rows, "left")
            gen = ref.generate(input_ids=ids, attention_mask=mask, max_new_tokens=NEW_TOKENS, do_sample=False,
                               pad_token_id=pad_id, eos_token_id=None)
            e["generated"] = gen[:, ids.shape[1]:].tolist()
            e["new_tokens"] = NEW_TOKENS
    return e


def write_case(out_dir, name, make_config, cls, dtype, seed):
    torch.manual_seed(seed)
    model = cls(make_config()).eval().to(DTYPES[dtype])
    path = os.path.join(out_dir, name)
    model.save_pretrained(path, safe_serialization=True)
    ref = reference(cls, path)
    e = {"input_rows": ROWS, "pad_id": PAD, "weights_dtype": dtype, "architecture": cls.__name__}
    e.update(expectations(ref, cls, ROWS, PAD))
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(e, f)
    print(f"{path}: {cls.__name__}, weights {dtype}")


def write_tokenizer_case(out_dir, shared, seed):
    """Qwen2.5's full vocabulary (151936) with a hidden size of 8: small enough to commit in
    bf16, and it reads the ids of the real tokenizer in ../shared/tokenizers/qwen2.5."""
    torch.manual_seed(seed)
    cfg = Qwen2Config(vocab_size=151936, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                      rope_parameters={"rope_type": "default", "rope_theta": 1e6}, tie_word_embeddings=True,
                      initializer_range=0.5, pad_token_id=151643, eos_token_id=None, bos_token_id=None)
    model = Qwen2ForCausalLM(cfg).eval().to(torch.bfloat16)
    path = os.path.join(out_dir, "qwen2-tok-bf16")
    model.save_pretrained(path, safe_serialization=True)
    tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(shared, "tokenizers/qwen2.5/tokenizer.json"))
    texts = ["The quick brown fox", "Hello, world! How are you today?"]
    rows = [tok(t)["input_ids"] for t in texts]
    ref = reference(Qwen2ForCausalLM, path)
    ids, mask = pad_with(rows, 151643)
    with torch.no_grad():
        gen = ref.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False,
                           pad_token_id=151643, eos_token_id=None)
    e = {"texts": texts, "input_rows": rows, "pad_id": 151643, "weights_dtype": "bf16",
         "architecture": "Qwen2ForCausalLM", "generated": gen[:, ids.shape[1]:].tolist(), "new_tokens": 6}
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(e, f)
    print(f"{path}: Qwen2ForCausalLM with Qwen2.5's vocabulary, bf16")


def pad_with(rows, pad_id):
    T = max(len(r) for r in rows)
    ids = torch.tensor([[pad_id] * (T - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (T - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


def write_base(out_dir, seed):
    """Qwen2.5-0.5B sized classifier (23 labels) with random weights, f32 and bf16: the speed peers."""
    cfg_path = os.path.join(os.path.dirname(__file__), "../../../shared/configs/qwen2.5-0.5b-instruct.config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    for dtype in ("f32", "bf16"):
        torch.manual_seed(seed)
        config = Qwen2Config(**{k: v for k, v in cfg.items() if not k.startswith("_") and k not in
                                ("architectures", "transformers_version", "torch_dtype")},
                             num_labels=23, pad_token_id=151643)
        model = Qwen2ForSequenceClassification(config).eval().to(DTYPES[dtype])
        path = os.path.join(out_dir, f"qwen2.5-0.5b-random-{dtype}")
        model.save_pretrained(path, safe_serialization=True)
        print(f"{path}: {sum(p.numel() for p in model.parameters())} parameters, {dtype}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--base", action="store_true")
    ap.add_argument("--seed", type=int, default=4321)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    if args.base:
        write_base(args.out_dir, args.seed)
        return
    only = os.environ.get("ONLY")
    for i, (name, make_config, cls, dtype) in enumerate(CASES):
        if only and name != only:
            continue
        write_case(args.out_dir, name, make_config, cls, dtype, args.seed + i)
    if only:
        return
    write_tokenizer_case(args.out_dir, args.shared, args.seed + 100)


if __name__ == "__main__":
    sys.exit(main())
