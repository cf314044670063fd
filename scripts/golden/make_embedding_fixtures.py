#!/usr/bin/env python3
"""sentence-transformers references for tach embed.

    scripts/golden/make_embedding_fixtures.py tests/fixtures [MINILM_DIR]

1. tests/fixtures/embeddings/pooling_cases.json: sentence-transformers' own pipeline
   (Transformer -> Pooling -> Normalize, run through SentenceTransformer's forward on token ids)
   over the tiny bare BERT in encoders/bert-base-model-f32, for each pooling configuration listed
   in CASES (the files tach must read are written into the case, so the test rebuilds the same
   directory). Rows are right-padded, and once left-padded, as a decoder's would be. Under
   "bodies", the other encoder families' tiny bare models (FAMILY_BODIES) with mean and CLS
   pooling, on their own rows.
2. With MINILM_DIR (../shared/tools/get-minilm): tests/fixtures/embeddings/minilm.safetensors,
   SentenceTransformer(MINILM_DIR).encode of the 872 SST-2 dev sentences (f16: the test's
   cosine bound of 0.99999 is 250x the rounding this costs) and of the hard texts in
   minilm_texts.json (f32, f32 compute, and f32 from a bf16 run of the same model), plus
   transformers' last_hidden_state of the hard texts (f16, unpadded, one tensor per text).
Development only: run with the virtualenv that has torch, transformers and sentence-transformers.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import sentence_transformers
import torch
import transformers
from safetensors.numpy import save_file
from sentence_transformers import SentenceTransformer

CASES = {
    "mean-normalize": {"pooling": {"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True}, "normalize": True},
    "cls-max": {"pooling": {"word_embedding_dimension": 16, "pooling_mode_cls_token": True,
                            "pooling_mode_max_tokens": True}, "normalize": False},
    "sqrt-weighted": {"pooling": {"embedding_dimension": 16, "pooling_mode": ["mean_sqrt_len_tokens", "weightedmean"]},
                      "normalize": True},
    "lasttoken": {"pooling": {"embedding_dimension": 16, "pooling_mode": "lasttoken"}, "normalize": False},
    "no-pooling-module": {"pooling": None, "normalize": False},
    # Dense modules after the pooling (LaBSE, sentence-t5 and distilled models have them): their
    # weights are written once under tests/fixtures/embeddings/dense/<case>/<module>/.
    "mean-dense-tanh-normalize": {"pooling": {"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True},
                                  "dense": [(16, 8, True, "torch.nn.modules.activation.Tanh")], "normalize": True},
    "cls-dense-identity-nobias-dense-tanh": {
        "pooling": {"word_embedding_dimension": 16, "pooling_mode_cls_token": True},
        "dense": [(16, 12, False, "torch.nn.modules.linear.Identity"), (12, 6, True, "torch.nn.modules.activation.Tanh")],
        "normalize": False},
}

# Bare models of the other encoder families, pooled as their sentence-embedding checkpoints are
# (all-mpnet-base-v2, multilingual-e5 and modernbert-embed: mean + normalize; bge-m3: CLS + normalize).
FAMILY_BODIES = ["encoders/roberta-base-model-f32", "encoders/xlm-roberta-base-model-f32", "encoders/mpnet-base-model-f32",
                 "decoders/modernbert-base-model-f32"]
FAMILY_CASES = ["mean-normalize", "cls-max"]

HARD_TEXTS = [
    "",
    "   ",
    "A man is eating food.",
    "Das Wetter ist heute schön, aber morgen wird es regnen.",
    "東京は日本の首都であり、世界最大級の都市圏を持つ。",
    "Москва — столица России.",
    "مرحبا بالعالم، كيف حالك اليوم؟",
    "नमस्ते दुनिया",
    "emoji 🙂🚀 and [CLS] literal [SEP] tokens",
    " ".join(["The quick brown fox jumps over the lazy dog, and then it runs far away."] * 40),
]


def write_case(dst, base, spec, dense_store=None):
    """dense_store: where the Dense modules' weights are made (seeded) and kept for the test."""
    for f in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(base, f), dst)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"}]
    if spec["pooling"] is not None:
        os.makedirs(os.path.join(dst, "1_Pooling"))
        json.dump(spec["pooling"], open(os.path.join(dst, "1_Pooling", "config.json"), "w"))
        modules.append({"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"})
    for k, (fin, fout, bias, act) in enumerate(spec.get("dense", [])):
        from sentence_transformers.sentence_transformer.modules import Dense
        name = f"{2 + k}_Dense"
        torch.manual_seed(100 + k)
        activation = torch.nn.Tanh() if act.endswith("Tanh") else torch.nn.Identity()
        os.makedirs(os.path.join(dense_store, name))
        Dense(fin, fout, bias=bias, activation_function=activation).save(os.path.join(dense_store, name))
        shutil.copytree(os.path.join(dense_store, name), os.path.join(dst, name))
        modules.append({"idx": 2 + k, "name": str(2 + k), "path": name, "type": "sentence_transformers.models.Dense"})
    if spec["normalize"]:
        n = 2 + len(spec.get("dense", []))
        modules.append({"idx": n, "name": str(n), "path": f"{n}_Normalize", "type": "sentence_transformers.models.Normalize"})
    json.dump(modules, open(os.path.join(dst, "modules.json"), "w"))
    json.dump({"max_seq_length": 512, "do_lower_case": False}, open(os.path.join(dst, "sentence_bert_config.json"), "w"))


def pooling_cases(root):
    base = os.path.join(root, "encoders", "bert-base-model-f32")
    rows = json.load(open(os.path.join(base, "expected.json")))["input_rows"]
    T = max(len(r) for r in rows)
    right = [r + [0] * (T - len(r)) for r in rows]
    right_mask = [[1] * len(r) + [0] * (T - len(r)) for r in rows]
    left = [[0] * (T - len(r)) + r for r in rows]
    left_mask = [[0] * (T - len(r)) + [1] * len(r) for r in rows]
    out = {"base": "encoders/bert-base-model-f32", "right": {"input_ids": right, "attention_mask": right_mask},
           "left": {"input_ids": left, "attention_mask": left_mask}, "cases": {},
           "made_with": {"sentence_transformers": sentence_transformers.__version__, "torch": torch.__version__}}
    for name, spec in CASES.items():
        with tempfile.TemporaryDirectory() as d:
            store = os.path.join(root, "embeddings", "dense", name)
            if spec.get("dense"):
                shutil.rmtree(store, ignore_errors=True)
                os.makedirs(store)
            write_case(d, base, spec, store)
            # The tokenizer is not used (features are token ids), but SentenceTransformer wants one.
            model = load_without_tokenizer(d)
            result = {"files": {"modules.json": json.load(open(os.path.join(d, "modules.json")))}}
            if spec["pooling"] is not None:
                result["files"]["1_Pooling/config.json"] = spec["pooling"]
            if spec.get("dense"):
                # Copied from tests/fixtures/ by the test: the config and the safetensors weights.
                result["copy"] = {f"{m}/{f}": f"embeddings/dense/{name}/{m}/{f}"
                                  for m in sorted(os.listdir(store)) for f in ("config.json", "model.safetensors")}
            for side in ("right", "left"):
                feats = {k: torch.tensor(v) for k, v in out[side].items()}
                feats["token_type_ids"] = torch.zeros_like(feats["input_ids"])
                with torch.no_grad():
                    emb = model(feats)["sentence_embedding"]
                result[side] = emb.tolist()
            out["cases"][name] = result
    out["bodies"] = {os.path.basename(body): family_body(root, body) for body in FAMILY_BODIES}
    dst = os.path.join(root, "embeddings")
    os.makedirs(dst, exist_ok=True)
    json.dump(out, open(os.path.join(dst, "pooling_cases.json"), "w"))


def family_body(root, body):
    base = os.path.join(root, body)
    expected = json.load(open(os.path.join(base, "expected.json")))
    rows, pad = expected["input_rows"], expected["pad_id"]
    T = max(len(r) for r in rows)
    right = {"input_ids": [r + [pad] * (T - len(r)) for r in rows],
             "attention_mask": [[1] * len(r) + [0] * (T - len(r)) for r in rows]}
    result = {"base": body, "right": right, "cases": {}}
    hidden = json.load(open(os.path.join(base, "config.json")))["hidden_size"]
    for name in FAMILY_CASES:
        spec = dict(CASES[name], pooling=dict(CASES[name]["pooling"], word_embedding_dimension=hidden))
        with tempfile.TemporaryDirectory() as d:
            write_case(d, base, spec)
            model = load_without_tokenizer(d)
            feats = {k: torch.tensor(v) for k, v in right.items()}
            with torch.no_grad():
                emb = model(feats)["sentence_embedding"]
            result["cases"][name] = {"files": {"modules.json": json.load(open(os.path.join(d, "modules.json"))),
                                               "1_Pooling/config.json": spec["pooling"]},
                                     "right": emb.tolist()}
    return result


def load_without_tokenizer(d):
    # SentenceTransformer's Transformer module loads a tokenizer from the directory; the tiny
    # model has none, so build the same module list by hand from the files written above.
    from sentence_transformers.sentence_transformer.modules import Pooling
    from sentence_transformers.base.modules import Normalize
    modules = json.load(open(os.path.join(d, "modules.json")))

    class Body(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = transformers.AutoModel.from_pretrained(d, attn_implementation="eager").eval()

        def forward(self, f):
            kw = {"token_type_ids": f["token_type_ids"]} if "token_type_ids" in f else {}
            f["token_embeddings"] = self.m(input_ids=f["input_ids"], attention_mask=f["attention_mask"],
                                           **kw).last_hidden_state
            return f

    seq = [Body()]
    kinds = [m["type"].rsplit(".", 1)[1] for m in modules]
    if "Pooling" in kinds:
        cfg = json.load(open(os.path.join(d, "1_Pooling", "config.json")))
        seq.append(Pooling(**_pooling_kwargs(cfg)))
    else:
        seq.append(Pooling(16))  # what SentenceTransformer adds when modules.json lists no Pooling module
    from sentence_transformers.sentence_transformer.modules import Dense
    for m in modules:
        if m["type"].endswith(".Dense"):
            seq.append(Dense.load(os.path.join(d, m["path"])))
    if "Normalize" in kinds:
        seq.append(Normalize())
    return torch.nn.Sequential(*seq).eval()


def _pooling_kwargs(cfg):
    from sentence_transformers.sentence_transformer.modules import pooling as P
    cfg = dict(cfg)
    if "word_embedding_dimension" in cfg:
        cfg["embedding_dimension"] = cfg.pop("word_embedding_dimension")
    P._convert_legacy_pooling_kwargs(cfg)
    return cfg


def minilm(root, model_dir):
    texts = [line.split("\t")[0] for line in open(os.path.join(os.path.dirname(__file__), "../../../shared/data/sst2/dev.tsv"),
                                                   encoding="utf-8").read().splitlines()[1:]]
    st = SentenceTransformer(model_dir, device="cpu")
    dev = st.encode(texts, batch_size=32, convert_to_numpy=True)
    hard = st.encode(HARD_TEXTS, batch_size=32, convert_to_numpy=True)
    st16 = SentenceTransformer(model_dir, device="cpu", model_kwargs={"dtype": torch.bfloat16})
    hard_bf16 = st16.encode(HARD_TEXTS, batch_size=32, convert_to_numpy=False)
    hard_bf16 = torch.stack(hard_bf16).float().numpy()
    tensors = {"sst2_dev": dev.astype(np.float16), "hard": hard.astype(np.float32),
               "hard_bf16": hard_bf16.astype(np.float32)}
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    m = transformers.AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    for i, t in enumerate(HARD_TEXTS):
        enc = tok(t, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            h = m(**enc).last_hidden_state[0]
        tensors[f"hidden.{i}"] = h.numpy().astype(np.float16)
    dst = os.path.join(root, "embeddings")
    os.makedirs(dst, exist_ok=True)
    save_file(tensors, os.path.join(dst, "minilm.safetensors"),
              metadata={"sentence_transformers": sentence_transformers.__version__, "torch": torch.__version__})
    json.dump({"hard_texts": HARD_TEXTS, "sst2_dev": "../shared/data/sst2/dev.tsv column text, all rows in file order",
               "max_length": 256}, open(os.path.join(dst, "minilm_texts.json"), "w"), ensure_ascii=False, indent=1)


if __name__ == "__main__":
    torch.manual_seed(0)
    pooling_cases(sys.argv[1])
    if len(sys.argv) > 2:
        minilm(sys.argv[1], sys.argv[2])
