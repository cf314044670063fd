#!/bin/sh
# tach bench --engine tach,torch,onnxruntime --accuracy with the development virtualenv
# (TACH_REF_PYTHON, default ~/tach-ref/bin/python; skips, saying why, without it or its packages):
# on a tiny DistilBERT classifier and a labelled CSV, each engine's accuracy in accuracy.json equals
# the one transformers gives here, from the tokenizers library and the model run text by text,
# truncated to the model's positions (no tach in between), and torch's predictions agree with tach's; the findings say so.
# usage: engine_accuracy.sh TACH FIXTURES PYTHON_PACKAGE WORK_DIR
set -eu
. "$(dirname "$0")/engine_script.sh"
engine_script_start "$@" torch transformers tokenizers onnxruntime onnx
model="$fixtures/encoders/distilbert-cls2-f32"
tokenizer="$fixtures/token_classes/tokenizer-wordpiece"
data="$fixtures/train/tiny.csv"

accuracy_bench run "$model" "$tokenizer" "$data" 16
grep -q "^- torch's accuracy equals tach's (0.7292 on 48 examples, cpu/f32; 0 predictions differ)" "$work/run.txt"
grep -q "^Accuracy per engine" "$work/run.txt"

# The same accuracy from transformers alone: the tokenizer.json tach reads, one text at a time.
"$python" - "$model" "$tokenizer/tokenizer.json" "$data" "$work/run/accuracy.json" << 'PY'
import csv, json, sys
import torch
from tokenizers import Tokenizer
from transformers import AutoModelForSequenceClassification

model_dir, tokenizer_file, data, accuracy_file = sys.argv[1:]
tok = Tokenizer.from_file(tokenizer_file)
tok.enable_truncation(max_length=json.load(open(model_dir + "/config.json"))["max_position_embeddings"])
model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
rows = list(csv.DictReader(open(data, newline="")))
correct = 0
with torch.no_grad():
    for row in rows:
        ids = tok.encode(row["text"]).ids
        logits = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long)).logits
        correct += int(logits.argmax(-1).item() == int(row["label"]))
expected = correct / len(rows)
acc = json.load(open(accuracy_file))
tach = acc["results"][0]
assert tach["examples"] == len(rows), tach["examples"]
engines = {e["engine"]: e for e in acc["engines"]}
assert set(engines) == {"torch", "onnxruntime"}, engines
for name, e in [("tach", tach)] + sorted(engines.items()):
    assert e.get("status", "ok") == "ok", (name, e)
    assert e["examples"] == len(rows), (name, e)
    assert abs(e["accuracy"] - expected) < 1e-12, (name, e["accuracy"], expected)
    print(f"{name}: accuracy {e['accuracy']:.4f} = transformers' {expected:.4f} on {len(rows)} examples")
assert engines["torch"]["differ_from_tach"] == 0, engines["torch"]
assert len(tach["predictions"]) == len(rows)
PY

# A resumed run keeps every pass: no engine's pass runs again.
resumed_keeps_every_pass "$work/run" "accuracy pass of engine" "- onnxruntime's accuracy"
echo "engine accuracy: ok"
