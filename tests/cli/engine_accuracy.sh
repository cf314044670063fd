#!/bin/sh
# tach bench --engine tach,torch,onnxruntime --accuracy with the development virtualenv
# (TACH_REF_PYTHON, default ~/tach-ref/bin/python; skips, saying why, without it or its packages):
# on a tiny DistilBERT classifier and a labelled CSV, each engine's accuracy in accuracy.json equals
# the one transformers gives here, from the tokenizers library and the model run text by text,
# truncated to the model's positions (no tach in between), and torch's predictions agree with tach's; the findings say so.
# usage: engine_accuracy.sh TACH FIXTURES PYTHON_PACKAGE WORK_DIR
set -eu
tach=$1
fixtures=$2
export TACH_PYTHON_PACKAGE="$3"
work=$4
python="${TACH_REF_PYTHON:-$HOME/tach-ref/bin/python}"
[ -x "$python" ] || { echo "skip: no development virtualenv at $python (scripts/peers/README.md)"; exit 77; }
"$python" -c "import torch, transformers, tokenizers, onnxruntime, onnx" 2> /dev/null ||
  { echo "skip: $python lacks torch, transformers, tokenizers, onnxruntime or onnx"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
model="$fixtures/encoders/distilbert-cls2-f32"
tokenizer="$fixtures/token_classes/tokenizer-wordpiece"
data="$fixtures/train/tiny.csv"

"$tach" bench -m "$model" -k "$tokenizer" -d "$data" --accuracy --eval-batch-size 16 \
  --engine tach,torch,onnxruntime --python "$python" -b 1 -s 8 -t 1 --runs 2 --warmup 1 \
  --no-progress --no-tensorboard --runs-dir "$work" --run-id run > "$work/bench.txt" 2>&1 ||
  { cat "$work/bench.txt"; exit 1; }
cat "$work/bench.txt"
grep -q "^- torch's accuracy equals tach's (0.7292 on 48 examples, cpu/f32; 0 predictions differ)" "$work/bench.txt"
grep -q "^Accuracy per engine" "$work/bench.txt"

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
"$tach" bench --resume "$work/run" --no-progress > "$work/resume.txt" 2>&1 || { cat "$work/resume.txt"; exit 1; }
if grep -q "accuracy pass of engine" "$work/resume.txt"; then cat "$work/resume.txt"; exit 1; fi
grep -q "^- onnxruntime's accuracy" "$work/resume.txt"
echo "engine accuracy: ok"
