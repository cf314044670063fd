#!/usr/bin/env python3
"""The sentencepiece-BPE tokenizer pipelines of Llama 2, Mistral, TinyLlama and Gemma, built from a
published sentencepiece model, and Hugging Face tokenizers' ids for them.

    scripts/golden/make_spm_tokenizers.py tests/fixtures/tokenizers/spm-mistral-v1 [--shared ../shared]

The model: Mistral 7B v0.1's tokenizer.model (32000 pieces, byte fallback), which the PyPI package
mistral-common ships unchanged as mistral_common/data/tokenizer.model.v1; the wheel is fetched
with pip and both it and the model are checked against their sha256. No tokenizer.json of these
models is on PyPI, so each is built here with `tokenizers` as transformers' converters build the
published ones (LlamaConverter legacy, LlamaConverter non-legacy, GemmaConverter): the same
BPE (vocab and merges from the sentencepiece model, <unk> fused, byte fallback to <0xNN>), and:
  llama2     normalizer Prepend("▁") + Replace(" ", "▁")            (Llama 2, Mistral v0.1, TinyLlama)
  metaspace  pre-tokenizer Metaspace("▁", prepend_scheme "first")   (transformers' non-legacy Llama)
  gemma      normalizer Replace(" ", "▁"), pre-tokenizer Split(" ", merged_with_previous)   (Gemma)
each with "<s> $A" as the post-processor and the Replace/ByteFallback/Fuse(/Strip) decoder.
Writes tokenizer.json (the llama2 variant, compact), pipeline-<variant>.json (the normalizer,
pre-tokenizer and decoder of the other two: the test puts them in place of the first's), and
expected-<variant>.jsonl ({"text", "ids", "decoded"} per text)
over ../shared's texts (SST-2 dev, AG News, CLINC150 and IMDB samples, as the golden ids there)
and tests/fixtures/tokenizers/hard_cases.jsonl's. (transformers 5's own converters fail on a bare
sentencepiece file, so the pipeline is assembled here from their definitions.)
Development only (tokenizers, transformers' SentencePieceExtractor, sentencepiece, protobuf).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile

from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE
from transformers.convert_slow_tokenizer import SentencePieceExtractor

WHEEL = "mistral_common-1.13.1-py3-none-any.whl"
WHEEL_SHA256 = "98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af"
MODEL = "mistral_common/data/tokenizer.model.v1"
MODEL_SHA256 = "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def fetch_model(tmp):
    subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "mistral-common==1.13.1", "-d", tmp])
    wheel = open(os.path.join(tmp, WHEEL), "rb").read()
    assert sha256(wheel) == WHEEL_SHA256, f"{WHEEL}: sha256 differs from the one recorded"
    data = zipfile.ZipFile(os.path.join(tmp, WHEEL)).read(MODEL)
    assert sha256(data) == MODEL_SHA256, f"{MODEL}: sha256 differs from the one recorded"
    path = os.path.join(tmp, "tokenizer.model")
    open(path, "wb").write(data)
    return path


def build(model_path, variant):
    kw = SentencePieceExtractor(model_path).extract(BPE)
    tok = Tokenizer(BPE(kw["vocab"], kw["merges"], unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    strip = []
    if variant == "llama2":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        strip = [decoders.Strip(content=" ", left=1)]
    elif variant == "metaspace":
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        strip = [decoders.Strip(content=" ", left=1)]
    elif variant == "gemma":
        tok.normalizer = normalizers.Replace(" ", "▁")
        tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()] + strip)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return tok


def texts(shared, hard_cases):
    out = []
    for name in ["sst2-dev", "agnews-test-500", "clinc150-test", "imdb-200"]:
        path = os.path.join(shared, "golden/tokenizers/hf", f"qwen2.5.{name}.jsonl")
        rows = [json.loads(l)["text"] for l in open(path, encoding="utf-8")]
        out += rows[:60]  # a sample of each: the files stay small
    out += sorted({json.loads(l)["text"] for l in open(hard_cases, encoding="utf-8")})
    out += ["<0x41> is not a byte", "tabs\tand\nnewlines", "  leading and trailing  ", "▁already▁marked",
            "emoji 🙂🚀 outside the vocabulary", "東京は日本の首都です", "x" * 300]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    hard = os.path.join(os.path.dirname(__file__), "../../tests/fixtures/tokenizers/hard_cases.jsonl")
    all_texts = texts(args.shared, hard)
    with tempfile.TemporaryDirectory() as tmp:
        model = fetch_model(tmp)
        for variant in ("llama2", "metaspace", "gemma"):
            tok = build(model, variant)
            j = json.loads(tok.to_str())
            if variant == "llama2":
                tok.save(os.path.join(args.out_dir, "tokenizer.json"), pretty=False)
            else:
                json.dump({k: j[k] for k in ("normalizer", "pre_tokenizer", "decoder")},
                          open(os.path.join(args.out_dir, f"pipeline-{variant}.json"), "w"), indent=1)
            with open(os.path.join(args.out_dir, f"expected-{variant}.jsonl"), "w", encoding="utf-8") as f:
                for t in all_texts:
                    ids = tok.encode(t).ids
                    f.write(json.dumps({"text": t, "ids": ids, "decoded": tok.decode(ids)}, ensure_ascii=False) + "\n")
            print(f"{variant}: {len(all_texts)} texts")
    json.dump({"source": f"{WHEEL} ({WHEEL_SHA256}) / {MODEL} ({MODEL_SHA256})"},
              open(os.path.join(args.out_dir, "SOURCE.json"), "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
