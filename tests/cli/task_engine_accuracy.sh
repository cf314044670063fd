#!/bin/sh
# tach bench --accuracy --engine tach,torch,onnxruntime on a token classifier and on a
# question-answering model, with the development virtualenv (TACH_REF_PYTHON, default
# ~/tach-ref/bin/python; skips, saying why, without it or its packages):
#  - token classification (the tiny BERT tagger, ner.conll): each engine's seqeval metrics in
#    accuracy.json equal transformers' own run here (is_split_into_words, the first sub-token's
#    prediction, as run_ner aligns them, scored by seqeval), with no tach in between; torch's tags
#    equal tach's; tach's figures equal tach eval's on the same data;
#  - question answering (the tiny BERT QA model, SQuAD v1.1): each engine's exact match and F1 equal
#    transformers' question-answering pipeline's scored by the official script (recorded in
#    question_answering/eval.json by scripts/golden/make_qa_golden.py: transformers 5 has no
#    pipeline to run here), and tach eval's; torch's answers equal tach's;
#  - a resumed run keeps every pass.
# usage: task_engine_accuracy.sh TACH FIXTURES PYTHON_PACKAGE WORK_DIR
set -eu
. "$(dirname "$0")/engine_script.sh"
engine_script_start "$@" torch transformers tokenizers onnxruntime onnx seqeval

# 1. Token classification.
model="$fixtures/heads/bert-tokcls-f32"
tokenizer="$fixtures/token_classes/tokenizer-wordpiece"
data="$fixtures/token_classes/ner.conll"
accuracy_bench tokens "$model" "$tokenizer" "$data" 4
grep -q "^- torch's entity F1 equals tach's (.* on 24 sentences, cpu/f32; 0 tags differ)" "$work/tokens.txt"
grep -q "^Accuracy per engine" "$work/tokens.txt"
"$tach" eval -m "$model" -k "$tokenizer" -d "$data" --runs-dir "$work" --run-id tokens-eval > /dev/null

"$python" - "$model" "$tokenizer/tokenizer.json" "$data" "$work/tokens" "$work/tokens-eval" << 'PY'
import json, sys, warnings
import torch
from seqeval.metrics import accuracy_score, classification_report
from transformers import AutoModelForTokenClassification, PreTrainedTokenizerFast

model_dir, tokenizer_file, data, run, eval_run = sys.argv[1:]
config = json.load(open(model_dir + "/config.json"))
tok = PreTrainedTokenizerFast(tokenizer_file=tokenizer_file, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                              sep_token="[SEP]", mask_token="[MASK]",
                              model_max_length=config["max_position_embeddings"])
model = AutoModelForTokenClassification.from_pretrained(model_dir).eval()
labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
sentences, words, tags = [], [], []
for line in open(data, encoding="utf-8"):
    parts = line.split()
    if not parts or parts[0] == "-DOCSTART-":
        if words:
            sentences.append((words, tags))
        words, tags = [], []
        continue
    words.append(parts[0])
    tags.append(parts[-1])
if words:
    sentences.append((words, tags))
truth, predicted = [], []
with torch.no_grad():
    for words, tags in sentences:
        enc = tok(words, is_split_into_words=True, truncation=True, return_tensors="pt")
        best = model(**enc).logits[0].argmax(-1).tolist()
        seen, got = set(), []
        for t, w in enumerate(enc.word_ids()):
            if w is None or w in seen:
                continue
            seen.add(w)
            got.append(labels[best[t]])
        truth.append(tags[:len(got)])
        predicted.append(got)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    micro = classification_report(truth, predicted, output_dict=True)["micro avg"]
expected = {"f1": micro["f1-score"], "precision": micro["precision"], "recall": micro["recall"],
            "word_accuracy": accuracy_score(truth, predicted)}
acc = json.load(open(run + "/accuracy.json"))
tach = acc["results"][0]
assert tach["task"] == "token-classification" and tach["examples"] == len(sentences), tach
engines = {e["engine"]: e for e in acc["engines"]}
assert set(engines) == {"torch", "onnxruntime"}, engines
for name, e in [("tach", tach)] + sorted(engines.items()):
    assert e.get("status", "ok") == "ok", (name, e)
    assert e["examples"] == len(sentences), (name, e)
    for k, v in expected.items():
        assert abs(e["metrics"][k] - v) < 1e-9, (name, k, e["metrics"][k], v)
    print(f"{name}: entity F1 {e['metrics']['f1']:.4f} = transformers' and seqeval's {expected['f1']:.4f}")
assert engines["torch"]["differ_from_tach"] == 0, engines["torch"]
assert tach["predictions"] == [t for s in predicted for t in s]
# tach's pass gives tach eval's figures, and its file beside accuracy.json.
ev = json.load(open(eval_run + "/token_classification.json"))["passes"][0]
for k in ("f1", "precision", "recall"):
    assert tach["metrics"][k] == ev["micro"][k], (k, tach["metrics"][k], ev["micro"][k])
assert tach["metrics"]["word_accuracy"] == ev["word_accuracy"]
mine = json.load(open(run + "/token_classification.json"))["passes"][0]
assert mine["micro"] == ev["micro"] and mine["per_type"] == ev["per_type"], (mine, ev)
print("tach bench's token pass = tach eval's")
PY

# 2. Question answering.
qa="$fixtures/question_answering"
model="$fixtures/heads/bert-qa-f32"
accuracy_bench answers "$model" "$qa/tokenizer-tiny" "$qa/squad-v1.json" 4
grep -q "^- torch's SQuAD F1 equals tach's (.* on 7 questions, cpu/f32; 0 answers differ)" "$work/answers.txt"
"$tach" eval -m "$model" -k "$qa/tokenizer-tiny" -d "$qa/squad-v1.json" --runs-dir "$work" --run-id answers-eval \
  > /dev/null
"$python" - "$qa/eval.json" "$work/answers" "$work/answers-eval" << 'PY'
import json, sys
golden, run, eval_run = sys.argv[1:]
want = [c for c in json.load(open(golden)) if c["version"] == "v1"][0]
acc = json.load(open(run + "/accuracy.json"))
tach = acc["results"][0]
assert tach["task"] == "question-answering" and tach["examples"] == 7, tach
engines = {e["engine"]: e for e in acc["engines"]}
assert set(engines) == {"torch", "onnxruntime"}, engines
for name, e in [("tach", tach)] + sorted(engines.items()):
    assert e.get("status", "ok") == "ok", (name, e)
    for k in ("exact_match", "f1"):
        assert abs(e["metrics"][k] - want["scores"][k]) < 1e-9, (name, k, e["metrics"][k], want["scores"][k])
    print(f"{name}: exact match {e['metrics']['exact_match']:.2f}%, F1 {e['metrics']['f1']:.2f}% = the pipeline's")
assert engines["torch"]["differ_from_tach"] == 0, engines["torch"]
assert tach["predictions"] == [want["predictions"]["q%d" % i] for i in range(7)], tach["predictions"]
ev = json.load(open(eval_run + "/question_answering.json"))["passes"][0]["scores"]
assert tach["metrics"]["exact_match"] == ev["exact_match"] and tach["metrics"]["f1"] == ev["f1"], (tach, ev)
print("tach bench's question-answering pass = tach eval's")
PY

# 3. A resumed run keeps every pass: no engine's pass runs again.
resumed_keeps_every_pass "$work/tokens" "accuracy pass" "- onnxruntime's entity F1"
echo "task engine accuracy: ok"
