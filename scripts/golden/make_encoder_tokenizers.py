#!/usr/bin/env python3
"""Tokenizers of the layouts MPNet and ModernBERT publish, and Hugging Face tokenizers' ids for them.

    scripts/golden/make_encoder_tokenizers.py tests/fixtures/tokenizers [--shared ../shared]

Neither model's tokenizer ships unchanged on PyPI, so each is built the way its published file is:
  mpnet       transformers 5's MPNetTokenizer (the MPNetConverter layout) on ../shared's
              bert-base-uncased vocab.txt, its special tokens <s> </s> <pad> <mask> added after the
              vocabulary: BertNormalizer (lowercase), BertPreTokenizer, WordPiece,
              "<s> $A </s>" / "<s> $A </s> </s> $B </s>" (all-mpnet-base-v2's layout)
  modernbert  a byte-level BPE trained here with tokenizers' BpeTrainer (2000 tokens) on ../shared's
              texts, in ModernBERT's layout: no normalizer, ByteLevel pre-tokenizer without a prefix
              space, "[CLS] $A [SEP]" / "[CLS] $A [SEP] $B [SEP]", ByteLevel decoder, its special
              tokens ([UNK] [CLS] [SEP] [PAD] [MASK]) as added tokens
Writes <name>/tokenizer.json and <name>/expected.jsonl: {"text", "ids", "offsets" (bytes),
"pair_ids" (short texts only), "decoded"} per text over ../shared's texts (SST-2 dev, AG News,
CLINC150 and IMDB samples) and tests/fixtures/tokenizers/hard_cases.jsonl.
Development only (tokenizers, transformers; sentencepiece, for make_unigram_tokenizers' helpers).
"""
import argparse
import json
import os
import sys
import tempfile

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import MPNetTokenizer

from make_unigram_tokenizers import SHARED_SETS, byte_offsets


def texts(shared, hard_cases):
    out = []
    for name in SHARED_SETS:
        path = os.path.join(shared, "golden/tokenizers/hf", f"qwen2.5.{name}.jsonl")
        rows = [json.loads(l)["text"] for l in open(path, encoding="utf-8")]
        out += rows[:20 if name == "imdb-200" else 50]
    out += sorted({json.loads(l)["text"] for l in open(hard_cases, encoding="utf-8")})
    return out + ["[CLS] inside [SEP] text", "<s>starts with one</s>", "x" * 300]


def mpnet(shared):
    lines = open(os.path.join(shared, "tokenizers/bert-base-uncased/vocab.txt"), encoding="utf-8").read().splitlines()
    return MPNetTokenizer(vocab={w: i for i, w in enumerate(lines)}).backend_tokenizer


def modernbert(shared, corpus):
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    trainer = trainers.BpeTrainer(vocab_size=2000, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tok


def write(out_dir, name, tok, all_texts):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(tok.to_str())
    tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))  # what the file says, read back
    with open(os.path.join(d, "expected.jsonl"), "w", encoding="utf-8") as f:
        for i, t in enumerate(all_texts):
            e = tok.encode(t)
            row = {"text": t, "ids": e.ids, "offsets": byte_offsets(t, e.offsets), "decoded": tok.decode(e.ids)}
            other = all_texts[(i + 1) % len(all_texts)]
            if len(t) + len(other) < 300:
                row["pair_ids"] = tok.encode(t, other).ids
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{d}: {len(all_texts)} texts")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    args = ap.parse_args()
    hard = os.path.join(os.path.dirname(__file__), "../../tests/fixtures/tokenizers/hard_cases.jsonl")
    all_texts = texts(args.shared, hard)
    corpus = []
    for name in SHARED_SETS:
        path = os.path.join(args.shared, "golden/tokenizers/hf", f"qwen2.5.{name}.jsonl")
        corpus += [json.loads(l)["text"] for l in open(path, encoding="utf-8")]
    write(args.out_dir, "mpnet", mpnet(args.shared), all_texts)
    write(args.out_dir, "modernbert-bpe", modernbert(args.shared, corpus), all_texts)


if __name__ == "__main__":
    sys.exit(main())
