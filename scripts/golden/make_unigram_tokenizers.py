#!/usr/bin/env python3
"""Unigram tokenizers behind sentencepiece's Precompiled normalizer (XLM-RoBERTa's kind), built the
way the published files are built, and Hugging Face tokenizers' ids and offsets for them.

    scripts/golden/make_unigram_tokenizers.py tests/fixtures/tokenizers/unigram-xlmr [--shared ../shared]

No XLM-R tokenizer is shipped unchanged on PyPI, so a sentencepiece Unigram model is trained here
(sentencepiece's trainer, 2000 pieces, its default nmt_nfkc normalization, whose compiled rules
become the precompiled_charsmap) on ../shared's texts plus the hard cases, and turned into
tokenizer.json files:
  published      XLMRobertaConverter's layout as in the files on the Hub: fairseq's ids (<s> <pad>
                 </s> <unk> first, the model's pieces from its fourth on, <mask> last), normalizer
                 Precompiled, Metaspace (add_prefix_space), "<s> $A </s>" / "<s> $A </s> </s> $B </s>"
  spm            transformers' SpmConverter normalizer: Precompiled, Strip(right), Replace(" {2,}", "▁")
  transformers5  transformers 5's XLMRobertaTokenizer(vocab, _spm_precompiled_charsmap):
                 WhitespaceSplit + Metaspace(prepend_scheme always)
  byte_fallback  a second model trained with byte_fallback (<0xNN> pieces), nmt_nfkc_cf (case
                 folding rules), Metaspace(prepend_scheme first), no fairseq offset
Writes tokenizer-published.json and tokenizer-byte_fallback.json whole; for spm and
transformers5, which share the first's model and charsmap, pipeline-<variant>.json holds the
normalizer, pre-tokenizer, post-processor and decoder with the charsmap given as "@published"
(the test puts the first file's in). expected-<variant>.jsonl holds {"text", "ids", "offsets",
"pair_ids" (short texts only), "decoded"} per text over ../shared's texts (SST-2 dev, AG News, CLINC150 and IMDB
samples, as the golden ids there), tests/fixtures/tokenizers/hard_cases.jsonl's, and texts that
reach the normalizer's rules (full-width forms, ligatures, compatibility characters, combining
marks, zero-width characters, runs of spaces).
Development only (sentencepiece, tokenizers, transformers, protobuf).
"""
import argparse
import json
import os
import sys
import tempfile

import sentencepiece as spm
from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors, Regex
from tokenizers.models import Unigram
from transformers.utils import sentencepiece_model_pb2_new as model_pb2

SHARED_SETS = ["sst2-dev", "agnews-test-500", "clinc150-test", "imdb-200"]

NORMALIZER_TEXTS = [
    "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３ ！？", "ﬁnance ﬂow ﬀ", "① ② ⅓ ½ ㎏ ㍻ ™ ℃", "café cafe\u0301 naïve nai\u0308ve",
    "zero\u200bwidth\u200cjoin\u200dhere\ufeff", "\u200bstarts with a zero-width space", "many     spaces   here",
    "trailing spaces   ", "  leading", "tab\there\nnewline", "ｶﾀｶﾅ ﾊﾝｶｸ", "ǅ ǆ Ǆ ĳ", "x\u0301\u0302\u0303\u0304\u0305",
    "한국어 텍스트 정규화", "Ελληνικά ΣΊΣΥΦΟΣ", "Straße STRASSE", "emoji 👍🏽 👨‍👩‍👧 🇫🇷", "``quoted'' text",
    "\u00a0non-breaking\u00a0space", "ℌ𝔢𝔩𝔩𝔬 𝕎𝕠𝕣𝕝𝕕", "٣٤٥ arabic digits", "\u3000ideographic space",
]


def texts(shared, hard_cases):
    out = []
    for name in SHARED_SETS:
        path = os.path.join(shared, "golden/tokenizers/hf", f"qwen2.5.{name}.jsonl")
        rows = [json.loads(l)["text"] for l in open(path, encoding="utf-8")]
        out += rows[:20 if name == "imdb-200" else 50]
    out += sorted({json.loads(l)["text"] for l in open(hard_cases, encoding="utf-8")})
    # Added tokens inside a text: Metaspace's "first" scheme prepends only to what starts the text.
    out += NORMALIZER_TEXTS + ["<s> inside text </s>", "x<s>after an added token", "<s>starts with one",
                                "two</s><s>specials", "x" * 300]
    return out


def training_text(shared, hard_cases, path):
    lines = []
    for name in SHARED_SETS:
        p = os.path.join(shared, "golden/tokenizers/hf", f"qwen2.5.{name}.jsonl")
        lines += [json.loads(l)["text"].replace("\n", " ") for l in open(p, encoding="utf-8")]
    lines += [json.loads(l)["text"].replace("\n", " ") for l in open(hard_cases, encoding="utf-8")]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(l for l in lines if l.strip()) + "\n")


def train(text_path, prefix, **kw):
    spm.SentencePieceTrainer.train(input=text_path, model_prefix=prefix, model_type="unigram", vocab_size=2000,
                                   character_coverage=0.9995, num_threads=2, minloglevel=2, **kw)
    proto = model_pb2.ModelProto()
    proto.ParseFromString(open(prefix + ".model", "rb").read())
    return proto


def xlmr_vocab(proto):
    # XLMRobertaConverter: fairseq's four specials first, the model's pieces from its fourth on.
    return [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + \
           [(p.piece, p.score) for p in proto.pieces[3:]] + [("<mask>", 0.0)]


def xlmr_post():
    return processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                         special_tokens=[("<s>", 0), ("</s>", 2)])


def build(proto, variant):
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if variant == "byte_fallback":
        vocab = [(p.piece, p.score) for p in proto.pieces]
        tok = Tokenizer(Unigram(vocab, unk_id=0, byte_fallback=True))
        tok.normalizer = normalizers.Precompiled(charsmap)
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="first"),
                                         decoders.ByteFallback(), decoders.Fuse()])
        tok.add_special_tokens(["<unk>", "<s>", "</s>"])
        tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> $B </s>",
                                                           special_tokens=[("<s>", 1), ("</s>", 2)])
        return tok
    tok = Tokenizer(Unigram(xlmr_vocab(proto), unk_id=3, byte_fallback=False))
    if variant == "published":
        tok.normalizer = normalizers.Precompiled(charsmap)
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    elif variant == "spm":
        tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap), normalizers.Strip(left=False, right=True),
                                               normalizers.Replace(Regex(" {2,}"), "▁")])
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    elif variant == "transformers5":
        from transformers import XLMRobertaTokenizer
        hf = XLMRobertaTokenizer(vocab=xlmr_vocab(proto), _spm_precompiled_charsmap=charsmap)
        return hf._tokenizer
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tok.post_processor = xlmr_post()
    return tok


def byte_offsets(text, offsets):
    """tokenizers' Python offsets count characters; tach's count UTF-8 bytes."""
    at = [0]
    for ch in text:
        at.append(at[-1] + len(ch.encode("utf-8")))
    return [[at[a], at[b]] for a, b in offsets]


def shared_charsmap(j):
    """The base64 charsmap inside a tokenizer.json's normalizer (alone or in a Sequence)."""
    n = j["normalizer"]
    for part in n.get("normalizers", [n]):
        if part["type"] == "Precompiled":
            return part["precompiled_charsmap"]
    raise ValueError("no Precompiled normalizer")


def published_layout(tok_json):
    """The Hub's files predate prepend_scheme: Metaspace says add_prefix_space."""
    j = json.loads(tok_json)
    for key in ("pre_tokenizer", "decoder"):
        j[key] = {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True}
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    hard = os.path.join(os.path.dirname(__file__), "../../tests/fixtures/tokenizers/hard_cases.jsonl")
    all_texts = texts(args.shared, hard)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        training_text(args.shared, hard, corpus)
        xlmr = train(corpus, os.path.join(tmp, "xlmr"))
        fallback = train(corpus, os.path.join(tmp, "fallback"), byte_fallback=True, normalization_rule_name="nmt_nfkc_cf")
    for variant in ("published", "spm", "transformers5", "byte_fallback"):
        tok = build(fallback if variant == "byte_fallback" else xlmr, variant)
        j = published_layout(tok.to_str()) if variant == "published" else json.loads(tok.to_str())
        if variant in ("published", "byte_fallback"):
            with open(os.path.join(args.out_dir, f"tokenizer-{variant}.json"), "w", encoding="utf-8") as f:
                json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
        else:
            parts = {k: j[k] for k in ("normalizer", "pre_tokenizer", "post_processor", "decoder")}
            with open(os.path.join(args.out_dir, f"pipeline-{variant}.json"), "w", encoding="utf-8") as f:
                f.write(json.dumps(parts, ensure_ascii=False, indent=1).replace(shared_charsmap(j), "@published"))
        tok = Tokenizer.from_str(json.dumps(j))  # what the file says, read back
        with open(os.path.join(args.out_dir, f"expected-{variant}.jsonl"), "w", encoding="utf-8") as f:
            for i, t in enumerate(all_texts):
                e = tok.encode(t)
                row = {"text": t, "ids": e.ids, "offsets": byte_offsets(t, e.offsets), "decoded": tok.decode(e.ids)}
                other = all_texts[(i + 1) % len(all_texts)]
                if len(t) + len(other) < 300:
                    row["pair_ids"] = tok.encode(t, other).ids
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{variant}: {len(all_texts)} texts")


if __name__ == "__main__":
    sys.exit(main())
