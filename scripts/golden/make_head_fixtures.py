#!/usr/bin/env python3
"""Writes tiny random checkpoints of every encoder family with every per-token head (masked LM,
token classification, question answering), and of the causal decoder families with theirs (token
classification, question answering), saved with transformers' own save_pretrained, and the
outputs transformers computes for one batch padded on the right and on the left.

    scripts/golden/make_head_fixtures.py tests/fixtures/heads

Each case directory holds config.json, model.safetensors and expected.json:
  input_rows, pad_id, architecture, parameters (transformers' count, tied weights once),
  logits_right / logits_left: [row][real token][output] (vocabulary, labels, or start/end),
  and with --with-hidden the bare body's hidden states are not written (the encoder fixtures hold them).
Norm weights and biases are randomised so that a norm read wrongly changes the numbers.
Development only: run with the virtualenv that has torch and transformers (docs/perf.md).
"""
import argparse
import json
import os
import sys

import torch
import transformers as tf

V = 120


def bert(**kw):
    return tf.BertConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=40, max_position_embeddings=32, type_vocab_size=2,
                         initializer_range=0.2, **kw)


def distilbert(**kw):
    return tf.DistilBertConfig(vocab_size=V, dim=16, n_layers=2, n_heads=4, hidden_dim=40,
                               max_position_embeddings=32, initializer_range=0.2, **kw)


def roberta_like(config_cls, **kw):
    return config_cls(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=40, max_position_embeddings=40, type_vocab_size=1, pad_token_id=1,
                      bos_token_id=0, eos_token_id=2, layer_norm_eps=1e-5, initializer_range=0.2, **kw)


def mpnet(**kw):
    return tf.MPNetConfig(vocab_size=V, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=40, max_position_embeddings=40, pad_token_id=1, bos_token_id=0,
                          eos_token_id=2, layer_norm_eps=1e-5, initializer_range=0.2, **kw)


def modernbert(**kw):
    base = dict(vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
                max_position_embeddings=64, norm_eps=1e-5, initializer_range=0.2, pad_token_id=0,
                bos_token_id=None, eos_token_id=None, cls_token_id=None, sep_token_id=None, local_attention=4,
                global_attn_every_n_layers=3, global_rope_theta=160.0, local_rope_theta=10.0)
    base.update(kw)
    return tf.ModernBertConfig(**base)


def decoder_like(config_cls, **kw):
    """The causal families' per-token heads: GQA, a q/k norm (Qwen3), biases on q/k/v (Qwen2)."""
    base = dict(vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, initializer_range=0.2,
                pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
    base.update(kw)
    return config_cls(**base)


NER = dict(num_labels=5, id2label={0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"},
           label2id={"O": 0, "B-PER": 1, "I-PER": 2, "B-LOC": 3, "I-LOC": 4})

# family, config maker, stem of transformers' class names, pad id, rows' start/end ids
FAMILIES = [
    ("bert", bert, "Bert", 0, (101, 102)),
    ("distilbert", distilbert, "DistilBert", 0, (101, 102)),
    ("roberta", lambda **kw: roberta_like(tf.RobertaConfig, **kw), "Roberta", 1, (0, 2)),
    ("xlm-roberta", lambda **kw: roberta_like(tf.XLMRobertaConfig, **kw), "XLMRoberta", 1, (0, 2)),
    ("mpnet", mpnet, "MPNet", 1, (0, 2)),
    ("modernbert", modernbert, "ModernBert", 0, (50, 51)),
]
HEADS = [("mlm", "ForMaskedLM", {}), ("tokcls", "ForTokenClassification", NER), ("qa", "ForQuestionAnswering", {})]


def cases():
    for family, make, stem, pad, ends in FAMILIES:
        for head, suffix, kw in HEADS:
            yield f"{family}-{head}-f32", (lambda make=make, kw=kw: make(**kw)), getattr(tf, stem + suffix), pad, ends
    # Untied decoders (their own weight stored), and ModernBERT's decoder and head.dense with biases.
    yield "bert-mlm-untied-f32", lambda: bert(tie_word_embeddings=False), tf.BertForMaskedLM, 0, (101, 102)
    yield "roberta-mlm-untied-f32", lambda: roberta_like(tf.RobertaConfig, tie_word_embeddings=False), \
        tf.RobertaForMaskedLM, 1, (0, 2)
    yield "modernbert-mlm-bias-f32", lambda: modernbert(classifier_bias=True, decoder_bias=True), \
        tf.ModernBertForMaskedLM, 0, (50, 51)
    # The causal families' token classifier (`score`) and question answering (`qa_outputs`; Llama's,
    # Qwen2's and Qwen3's body under `transformer.`), after every case above so their seeds stay.
    for family, make, stem in DECODERS:
        for head, suffix, kw in HEADS[1:]:
            yield f"{family}-{head}-f32", (lambda make=make, kw=kw: make(**kw)), getattr(tf, stem + suffix), 0, (1, 2)


DECODERS = [
    ("llama", lambda **kw: decoder_like(tf.LlamaConfig, attention_bias=True, **kw), "Llama"),
    ("mistral", lambda **kw: decoder_like(tf.MistralConfig, sliding_window=8, **kw), "Mistral"),
    ("qwen2", lambda **kw: decoder_like(tf.Qwen2Config, **kw), "Qwen2"),
    ("qwen3", lambda **kw: decoder_like(tf.Qwen3Config, head_dim=16, **kw), "Qwen3"),
]


def rows_for(pad, ends):
    start, end = ends
    body = [[7, 19, 33, 54], [88], [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], [60, 3, 40, 41]]
    # Never the pad id inside a row (RoBERTa would give it the padding position in both pads).
    return [[start] + [t if t != pad else t + 3 for t in b] + [end] for b in body]


def padded(rows, pad, side):
    T = max(len(r) for r in rows)
    fill = lambda r: [pad] * (T - len(r))
    ids = [r + fill(r) if side == "right" else fill(r) + r for r in rows]
    mask = [[1] * len(r) + [0] * (T - len(r)) if side == "right" else [0] * (T - len(r)) + [1] * len(r) for r in rows]
    return torch.tensor(ids), torch.tensor(mask)


def randomize_norms_and_biases(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() or name.endswith("bias"):
                p.copy_(p + 0.3 * torch.randn(p.shape, generator=g))


def family_of(name):
    return name.split("-")[0]


DECODER_NAMES = ("llama", "mistral", "qwen2", "qwen3")


def write_case(out_dir, name, make_config, cls, pad, ends, seed):
    torch.manual_seed(seed)
    model = cls(make_config()).eval()
    randomize_norms_and_biases(model, seed)
    path = os.path.join(out_dir, name)
    model.save_pretrained(path, safe_serialization=True)
    kw = {"attn_implementation": "eager"} if "ModernBert" in cls.__name__ or family_of(name) in DECODER_NAMES else {}
    ref = cls.from_pretrained(path, dtype=torch.float32, **kw).eval()
    rows = rows_for(pad, ends)
    e = {"input_rows": rows, "pad_id": pad, "architecture": cls.__name__,
         "parameters": sum(p.numel() for p in ref.parameters())}
    with torch.no_grad():
        for side in ("right", "left"):
            ids, mask = padded(rows, pad, side)
            out = ref(input_ids=ids, attention_mask=mask)
            T = ids.shape[1]
            logits = out.logits if hasattr(out, "logits") and out.logits is not None else \
                torch.stack([out.start_logits, out.end_logits], dim=-1)
            e[f"logits_{side}"] = [logits[i, (0 if side == "right" else T - len(r)):][:len(r)].tolist()
                                   for i, r in enumerate(rows)]
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(e, f)
    print(f"{path}: {cls.__name__}, {e['parameters']} parameters")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=4321)
    ap.add_argument("--only", default="", help="comma-separated case names (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    for i, (name, make, cls, pad, ends) in enumerate(cases()):
        if args.only and name not in args.only.split(","):
            continue
        write_case(args.out_dir, name, make, cls, pad, ends, args.seed + i)


if __name__ == "__main__":
    sys.exit(main())
