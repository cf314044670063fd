#!/usr/bin/env python3
"""Writes what transformers' fill-mask pipeline returns for the tiny masked-LM checkpoints of
tests/fixtures/heads (make_head_fixtures.py), with two tiny tokenizers whose 120 ids fit their
vocabulary, saved beside the expectations:

  wordpiece-120: BERT's layout ([PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4), lowercasing,
                 clean_up_tokenization_spaces on (transformers then cleans every decode);
  roberta-120:   RoBERTa's special tokens (<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> 4 with lstrip),
                 the same WordPiece words, no clean-up.

    scripts/golden/make_fill_mask_golden.py tests/fixtures/fill_mask [--heads tests/fixtures/heads]

tests/fixtures/fill_mask/expected.json: per case the model directory (relative to the heads
fixtures), the sha256 of its model.safetensors (a regenerated checkpoint makes these stale: the
test says so), the tokenizer, and per text its top_k (5, or fewer where the 5 would end in a near
tie: scores within 1e-5 of the next, whose order could hinge on rounding) and the pipeline's output
as a list per mask of {score, token, token_str, sequence}.
Development only: run with the virtualenv that has torch and transformers (docs/perf.md).
"""
import argparse
import hashlib
import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import WordPiece
import transformers as tf

WORDS = ("the is of a an on in and to it this that was he she they we you i my your his her our "
         "paris france capital city center cat dog sat mat hello world don t s good bad big small red "
         "blue green house car tree sun moon day night time man woman child people country river sea "
         "king queen work play run walk talk eat drink read write sing new old first last long short "
         "high low home school book water fire . , ' ? ! - ##s ##ed ##ing ##ly ##er").split()


def vocab_with(specials):
    tokens = list(specials) + WORDS
    assert len(tokens) <= 120, len(tokens)
    tokens += [f"[unused{i}]" for i in range(120 - len(tokens))]
    return {t: i for i, t in enumerate(tokens)}


def wordpiece_tokenizer(specials, cls, sep, unk):
    t = Tokenizer(WordPiece(vocab_with(specials), unk_token=unk, max_input_chars_per_word=100))
    t.normalizer = normalizers.BertNormalizer(lowercase=True)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, specials.index(cls)), (sep, specials.index(sep))])
    t.decoder = decoders.WordPiece(prefix="##")
    return t


def save_tokenizers(out_dir):
    made = {}
    bert = wordpiece_tokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "[CLS]", "[SEP]", "[UNK]")
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=bert, unk_token="[UNK]", sep_token="[SEP]",
                                      pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]",
                                      clean_up_tokenization_spaces=True)
    fast.save_pretrained(os.path.join(out_dir, "wordpiece-120"))
    made["wordpiece-120"] = fast
    roberta = wordpiece_tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "<s>", "</s>", "<unk>")
    fast = tf.PreTrainedTokenizerFast(tokenizer_object=roberta, bos_token="<s>", eos_token="</s>",
                                      unk_token="<unk>", sep_token="</s>", pad_token="<pad>", cls_token="<s>",
                                      mask_token=tf.AddedToken("<mask>", lstrip=True, rstrip=False, special=True),
                                      clean_up_tokenization_spaces=False)
    fast.save_pretrained(os.path.join(out_dir, "roberta-120"))
    made["roberta-120"] = fast
    # Reload as a user would: what the files say, not the objects above.
    return {name: tf.AutoTokenizer.from_pretrained(os.path.join(out_dir, name)) for name in made}


TEXTS = {
    "[MASK]": ["paris is the [MASK] of france.", "The cat sat on the [MASK].", "[MASK] is the [MASK] of France.",
               "hello, world! don't [MASK] the dog's house?"],
    "<mask>": ["paris is the <mask> of france.", "The cat sat on the<mask>.", "<mask> is the <mask> of France."],
}


def clear_top_k(probs_row, top_k):
    """The largest k <= top_k whose top k are apart from each other and from the next by 1e-5."""
    values, _ = torch.sort(probs_row, descending=True)
    gaps = (values[:-1] - values[1:])[:top_k]
    for k in range(top_k, 0, -1):
        if bool((gaps[:k] >= 1e-5).all()):
            return k
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--heads", default=os.path.join(os.path.dirname(__file__), "../../tests/fixtures/heads"))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    tokenizers = save_tokenizers(args.out_dir)
    cases = []
    for name in sorted(os.listdir(args.heads)):
        if "-mlm" not in name:
            continue
        model_dir = os.path.join(args.heads, name)
        model = tf.AutoModelForMaskedLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        tok_name = "roberta-120" if model.config.pad_token_id == 1 else "wordpiece-120"
        tok = tokenizers[tok_name]
        fill = tf.pipeline("fill-mask", model=model, tokenizer=tok, device="cpu")
        texts = TEXTS[tok.mask_token]
        results = []
        for text in texts:
            ids = tok(text, return_tensors="pt")
            with torch.no_grad():
                logits = model(**ids).logits[0]
            top_k = min(clear_top_k(logits[pos].softmax(-1), 5)
                        for pos in (ids["input_ids"][0] == tok.mask_token_id).nonzero().flatten().tolist())
            if top_k < 2:
                sys.exit(f"{name}: {text!r}: near ties at the top; pick another text")
            out = fill(text, top_k=top_k)
            if isinstance(out[0], dict):  # one mask: the pipeline drops the outer list
                out = [out]
            results.append({"text": text, "top_k": top_k, "input_ids": ids["input_ids"][0].tolist(),
                            "masks": [[{"score": float(p["score"]), "token": int(p["token"]),
                                        "token_str": p["token_str"], "sequence": p["sequence"]} for p in mask]
                                      for mask in out]})
        with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        cases.append({"model": name, "model_sha256": digest, "tokenizer": tok_name, "texts": results})
        print(f"{name}: {len(results)} texts with {tok_name}")
    if not cases:
        sys.exit(f"{args.heads}: no masked-LM fixtures (*-mlm-*): run make_head_fixtures.py first")
    with open(os.path.join(args.out_dir, "expected.json"), "w") as f:
        json.dump({"transformers": tf.__version__, "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
