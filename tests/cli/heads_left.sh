#!/usr/bin/env bash
# The per-token heads through the binary, past their first commands:
#  1. the Hub's Parquet files: tach eval on SQuAD Parquet and on conll2003-style Parquet (tags
#     named by the file's ClassLabel) equals the same data's JSONL run; tach train --task
#     question-answering on Parquet trains the same steps as on JSONL;
#  2. tach report on a token classifier's and a question-answering model's eval runs shows their
#     scores; tach compare compares them (the same, higher or lower, other data not compared);
#  3. tach classify says which texts it cut to the model's positions and by how much; tach estimate
#     counts a question-answering model at 384 tokens (MLPerf's shape) and says so; tach fill-mask
#     prints 4 significant digits of each score, --json all of them.
# usage: heads_left.sh TACH FIXTURES_DIR WORK_DIR
set -euo pipefail
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
qa_model=$fx/heads/bert-qa-f32
qa_tok=$fx/question_answering/tokenizer-tiny
ner_model=$fx/heads/bert-tokcls-f32
ner_tok=$fx/token_classes/tokenizer-wordpiece
for d in "$qa_model" "$ner_model" "$fx/parquet/squad-v2.parquet"; do [ -e "$d" ] || { echo "skip: no $d"; exit 77; }; done
runs=$work/runs

# 1. Parquet. SQuAD v2 in Parquet and in JSONL: the same questions, answers and scores.
for f in parquet jsonl; do
  data=$fx/question_answering/squad-v2.jsonl
  [ $f = parquet ] && data=$fx/parquet/squad-v2.parquet
  "$tach" eval -m "$qa_model" -k "$qa_tok" -d "$data" -s 32 --doc-stride 16 --runs-dir "$runs" --run-id qa-$f \
    > "$work/qa-$f.txt" 2>&1 || { cat "$work/qa-$f.txt"; fail "eval on SQuAD $f"; }
done
grep -q "(flat Parquet)" "$work/qa-parquet.txt" || fail "the layout is not named: $(cat "$work/qa-parquet.txt")"
python3 - "$runs" <<'PY' || fail "SQuAD Parquet and JSONL differ"
import json, sys
r = sys.argv[1]
p, j = (json.load(open(f"{r}/qa-{f}/question_answering.json")) for f in ("parquet", "jsonl"))
assert p["squad_version"] == j["squad_version"] == "v2.0", (p["squad_version"], j["squad_version"])
assert p["passes"][0]["scores"] == j["passes"][0]["scores"], (p["passes"][0]["scores"], j["passes"][0]["scores"])
assert json.load(open(f"{r}/qa-parquet/predictions.json")) == json.load(open(f"{r}/qa-jsonl/predictions.json"))
print("ok: eval on SQuAD Parquet equals its JSONL (EM %.2f, F1 %.2f)" % (p["passes"][0]["scores"]["exact_match"], p["passes"][0]["scores"]["f1"]))
PY
# conll2003's layout: integer tags the file's ClassLabel names (I-LOC,B-LOC,I-PER,B-PER,O, not the
# model's order), so the JSONL run names them with --tag-names.
"$tach" eval -m "$ner_model" -k "$ner_tok" -d "$fx/parquet/ner.parquet" --runs-dir "$runs" --run-id ner-parquet \
  > "$work/ner-parquet.txt" 2>&1 || { cat "$work/ner-parquet.txt"; fail "eval on tagged Parquet"; }
"$tach" eval -m "$ner_model" -k "$ner_tok" -d "$fx/token_classes/ner.jsonl" --tag-names I-LOC,B-LOC,I-PER,B-PER,O \
  --runs-dir "$runs" --run-id ner-jsonl > /dev/null
"$tach" eval -m "$ner_model" -k "$ner_tok" -d "$fx/token_classes/ner.jsonl" --runs-dir "$runs" --run-id ner-model-order \
  > /dev/null
python3 - "$runs" <<'PY' || fail "tagged Parquet and JSONL differ"
import json, sys
r = sys.argv[1]
p, j, m = (json.load(open(f"{r}/{d}/token_classification.json"))["passes"][0] for d in ("ner-parquet", "ner-jsonl", "ner-model-order"))
keys = ("sentences", "words", "per_type", "micro", "macro", "weighted", "word_accuracy")
assert all(p[k] == j[k] for k in keys), [(k, p[k], j[k]) for k in keys if p[k] != j[k]]
assert p["word_accuracy"] != m["word_accuracy"], "the file's names were not used"
print("ok: eval on tagged Parquet equals its JSONL with the file's tag names (micro F1 %s)" % p["micro"]["f1"])
PY
# train --task question-answering: the same windows and steps from Parquet as from JSONL.
for f in parquet jsonl; do
  data=$fx/question_answering/squad-v2.jsonl
  [ $f = parquet ] && data=$fx/parquet/squad-v2.parquet
  "$tach" train -m "$fx/train_tasks/bert-qa-f32/model" -k "$qa_tok" -d "$data" --task question-answering -s 32 \
    --doc-stride 8 -b 4 --epochs 1 --no-shuffle --no-dropout --runs-dir "$runs" --run-id train-qa-$f --no-progress \
    --no-tensorboard > "$work/train-$f.txt" 2>&1 || { cat "$work/train-$f.txt"; fail "train on SQuAD $f"; }
done
python3 - "$runs" <<'PY' || fail "training on SQuAD Parquet and JSONL differ"
import json, sys
r = sys.argv[1]
steps = {f: [json.loads(l) for l in open(f"{r}/train-qa-{f}/steps.jsonl")] for f in ("parquet", "jsonl")}
loss = {f: [s["metrics"]["loss"] for s in steps[f] if "loss" in s.get("metrics", {})] for f in steps}
assert loss["parquet"] and loss["parquet"] == loss["jsonl"], loss
print("ok: train on SQuAD Parquet takes the JSONL run's %d steps (losses %s)" % (len(loss["parquet"]), loss["parquet"]))
PY

# 2. report and compare on the eval runs.
for run in qa-parquet ner-parquet; do
  "$tach" report "$runs/$run" > "$work/report-$run.txt" 2>&1 || { cat "$work/report-$run.txt"; fail "report $run"; }
done
python3 - "$runs" <<'PY' || fail "report.html"
import json, re, sys
r = sys.argv[1]
html = open(f"{r}/ner-parquet/report.html", encoding="utf-8").read()
p = json.load(open(f"{r}/ner-parquet/token_classification.json"))["passes"][0]
assert "Entity scores (seqeval)" in html and "Per entity type: cpu/f32" in html, "no seqeval section"
assert "%.4f" % p["micro"]["f1"] in html, ("micro F1", p["micro"]["f1"])
for t in p["per_type"]:
    assert re.search(r"<td>%s</td><td>%.4f</td><td>%.4f</td><td>%.4f</td><td>%d</td>" % (t["type"], t["precision"], t["recall"], t["f1"], t["support"]), html), t
html = open(f"{r}/qa-parquet/report.html", encoding="utf-8").read()
s = json.load(open(f"{r}/qa-parquet/question_answering.json"))["passes"][0]["scores"]
assert "SQuAD scores" in html, "no SQuAD section"
for k in ("exact_match", "f1", "HasAns_f1", "NoAns_exact"):
    assert "%.2f%%" % s[k] in html, (k, s[k])
print("ok: report.html shows seqeval's per-entity table and the SQuAD scores")
PY
# The same data: the same scores. Another model on it: higher or lower by the points between them.
"$tach" compare "$runs/ner-parquet" "$runs/ner-parquet" --no-html > "$work/compare-same.txt"
grep -q "eval scores: 0 higher, 0 lower, [0-9]* the same" "$work/compare-same.txt" || fail "$(cat "$work/compare-same.txt")"
"$tach" eval -m "$fx/heads/distilbert-tokcls-f32" -k "$ner_tok" -d "$fx/parquet/ner.parquet" --runs-dir "$runs" \
  --run-id ner-distilbert > /dev/null
"$tach" compare "$runs/ner-parquet" "$runs/ner-distilbert" --format json --html "$work/compare.html" > "$work/compare.json"
python3 - "$runs" "$work/compare.json" <<'PY' || fail "compare of two token classifiers"
import json, sys
r = sys.argv[1]
c = json.load(open(sys.argv[2]))
a, b = (json.load(open(f"{r}/{d}/token_classification.json"))["passes"][0] for d in ("ner-parquet", "ner-distilbert"))
got = {s["metric"]: s for s in c["scores"]}
f1 = got["entity F1 (micro)"]
assert abs(f1["baseline_percent"] - 100 * a["micro"]["f1"]) < 1e-9 and abs(f1["percent"] - 100 * b["micro"]["f1"]) < 1e-9, f1
want = "higher" if b["micro"]["f1"] > a["micro"]["f1"] else "lower" if b["micro"]["f1"] < a["micro"]["f1"] else "same"
assert f1["verdict"] == want, (f1, want)
for t in a["per_type"]:
    assert "F1 " + t["type"] in got, t["type"]
print("ok: compare gives each seqeval score's change (micro F1 %s -> %s: %s)" % (a["micro"]["f1"], b["micro"]["f1"], want))
PY
grep -q "Eval scores" "$work/compare.html" || fail "compare.html has no scores"
# Other data (the JSONL file): not compared, and said.
"$tach" compare "$runs/qa-parquet" "$runs/qa-jsonl" --no-html > "$work/compare-other.txt"
grep -q "not comparable" "$work/compare-other.txt" && grep -q "other data: the baseline's" "$work/compare-other.txt" \
  || fail "$(cat "$work/compare-other.txt")"
echo "ok: compare says scores on other data are not compared"

# 3. classify cuts a long text to the model's 32 positions and says so.
long="John Smith lives in New York and works for Google in London with Mary Jones of Paris and Berlin every day of the week"
"$tach" classify -m "$ner_model" -k "$ner_tok" --text "$long" --text "John lives in Paris." --warmup 0 --repeat 1 --json \
  > "$work/classify.json"
python3 - "$work/classify.json" <<'PY' || fail "classify --json: truncated"
import json, sys
j = json.load(open(sys.argv[1]))
t = j["input"]["truncated"]
assert len(t) == 1 and t[0]["text"] == 1 and t[0]["kept"] == 32 and t[0]["tokens"] > 32, t
assert t[0]["note"] == "text 1: %d tokens, cut to the model's 32 positions; its last %d tokens (and their words) get no label" % (t[0]["tokens"], t[0]["tokens"] - 32), t
print("ok: classify says text 1 was cut from %d to 32 tokens" % t[0]["tokens"])
PY
"$tach" classify -m "$ner_model" -k "$ner_tok" --text "$long" --warmup 0 --repeat 1 > "$work/classify.txt"
grep -q "^note        text 1: [0-9]* tokens, cut to the model's 32 positions" "$work/classify.txt" || fail "$(cat "$work/classify.txt")"

# estimate: a question-answering model at MLPerf's 384 tokens, or its longest row when shorter.
"$tach" estimate -m preset:bert-large-uncased --json > "$work/estimate-large.json"
"$tach" estimate -m preset:bert-large-uncased > "$work/estimate-large.txt"
"$tach" estimate -m "$qa_model" --json > "$work/estimate-tiny.json"
"$tach" estimate -m "$ner_model" --json > "$work/estimate-ner.json"
python3 - "$work" <<'PY' || fail "estimate of a question-answering model"
import json, sys
w = sys.argv[1]
large, tiny, ner = (json.load(open(f"{w}/estimate-{n}.json"))["setting"] for n in ("large", "tiny", "ner"))
assert large["seq_len"] == 384 and "MLPerf" in large["seq_len_note"], large
assert tiny["seq_len"] == 32 and "short of MLPerf's 384" in tiny["seq_len_note"], tiny
assert ner["seq_len"] == 32 and ner["seq_len_note"] == "the model's longest row; -s sets another", ner
print("ok: estimate takes 384 tokens for a question-answering model and says why")
PY
grep -q "batch 1 x 384 tokens (MLPerf's BERT shape for a question-answering model" "$work/estimate-large.txt" \
  || fail "$(cat "$work/estimate-large.txt")"

# fill-mask: the table's scores are --json's to 4 significant digits.
"$tach" fill-mask -m "$fx/heads/bert-mlm-f32" -k "$fx/fill_mask/wordpiece-120" --text "paris is the [MASK] of france." \
  --json > "$work/fill.json"
"$tach" fill-mask -m "$fx/heads/bert-mlm-f32" -k "$fx/fill_mask/wordpiece-120" --text "paris is the [MASK] of france." \
  > "$work/fill.txt"
python3 - "$work/fill.json" "$work/fill.txt" <<'PY' || fail "fill-mask scores"
import json, sys
scores = [p["score"] for p in json.load(open(sys.argv[1]))["results"][0]["masks"][0]["predictions"]]
table = [l.split()[0] for l in open(sys.argv[2]) if l.startswith("  ") and l.split() and l.split()[0][0].isdigit()]
assert table == ["%.4g" % s for s in scores], (table, scores)
print("ok: fill-mask prints %s (4 significant digits of %s)" % (table, scores))
PY

# bench --train --task: each per-token head's training steps, on synthetic rows of its shape.
for t in mlm token-classification question-answering; do
  "$tach" bench --train --task $t -m "$fx/train_tasks/bert-mlm-f32/model" -b 2 -s 16 --max-runs 3 --runs-dir "$runs" \
    --run-id bench-$t > "$work/bench-$t.txt" 2>&1 || { cat "$work/bench-$t.txt"; fail "bench --train --task $t"; }
done
python3 - "$runs" <<'PY' || fail "bench --train --task"
import json, math, sys
r = sys.argv[1]
want = {"mlm": "BertForMaskedLM", "token-classification": "BertForTokenClassification", "question-answering": "BertForQuestionAnswering"}
for task, arch in want.items():
    s = json.load(open(f"{r}/bench-{task}/summary.json"))
    points = [json.loads(l) for l in open(f"{r}/bench-{task}/results.jsonl")]
    assert s["models"][0]["architecture"] == arch, (task, s["models"][0])
    assert points and all(p["status"] == "ok" and math.isfinite(p["train"]["loss_first"]) for p in points), points
    assert json.load(open(f"{r}/bench-{task}/config.json"))["train"]["task"] == task
print("ok: bench --train --task times the masked LM's, the token classifier's and QA's steps")
PY
if "$tach" bench --train --task mlm -m "$fx/train_tasks/bert-mlm-f32/model" -d "$fx/train/tiny.csv" -b 2 -s 16 \
  --runs-dir "$runs" --run-id bench-bad > "$work/bench-bad.txt" 2>&1; then fail "a dataset with --task mlm was taken"; fi
grep -q "times steps on synthetic rows" "$work/bench-bad.txt" || fail "$(cat "$work/bench-bad.txt")"

# profile --train --task: the steps run the task's head (its module in the op table).
for pair in mlm:lm_head token-classification:classifier question-answering:qa_outputs; do
  t=${pair%%:*}
  "$tach" profile --train --task $t -m "$fx/train_tasks/bert-mlm-f32/model" -b 2 -s 16 \
    --profiler-output-dir "$work/profile-$t" > "$work/profile-$t.txt" 2>&1 || { cat "$work/profile-$t.txt"; fail "profile --train --task $t"; }
  grep -q "${pair#*:}" "$work/profile-$t/ops_by_module.csv" || fail "profile --train --task $t: no ${pair#*:} in the op table"
done
echo "ok: profile --train --task runs each per-token head's training step"
