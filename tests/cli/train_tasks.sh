#!/usr/bin/env bash
# tach train --task: continued masked-LM pre-training reports perplexity and saves a masked LM
# transformers loads as one; token classification trains on CoNLL tags and saves its labels; the
# default task on a masked-LM checkpoint builds a new sequence classifier with transformers' note;
# bad input is refused naming the option.
# Usage: train_tasks.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tok="$fixtures/token_classes/tokenizer-wordpiece"
mlm="$fixtures/train_tasks/bert-mlm-f32/model"
common=(-k "$tok" -s 32 -b 4 --runs-dir "$dir" --no-progress --no-tensorboard)
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v:=v[k] for k in sys.argv[2:]]; print(json.dumps(v))' "$@"; }

# Masked LM: perplexity = exp(eval loss) in the epoch line and in steps.jsonl.
"$tach" train -m "$mlm" "${common[@]}" -d "$fixtures/train/tiny.csv" --eval-dataset "$fixtures/train/tiny.csv" \
  --task mlm --epochs 2 --run-id mlm >"$dir/mlm.out" 2>"$dir/mlm.err" || { cat "$dir/mlm.err"; fail "mlm run"; }
grep -Eq "epoch 2: train loss [0-9.]+, eval loss [0-9.]+, perplexity [0-9.]+" "$dir/mlm.out" || fail "no perplexity: $(cat "$dir/mlm.out")"
python3 - "$dir/mlm/steps.jsonl" <<'PY' || fail "perplexity is not exp(eval loss), or a score a masked LM has not is written"
import json, math, sys
rows = [json.loads(l)["metrics"] for l in open(sys.argv[1]) if "eval_loss" in l]
assert rows, "no evaluation logged"
for r in rows:
    assert abs(r["eval_perplexity"] - math.exp(r["eval_loss"])) < 1e-6 * r["eval_perplexity"], r
    assert "eval_accuracy" not in r and "eval_macro_f1" not in r, r  # a masked LM has neither
PY
[ "$(field "$dir/mlm/model/config.json" architectures)" = '["BertForMaskedLM"]' ] || fail "saved architecture"
python3 - "$dir/mlm/summary.json" <<'PY' || fail "summary.json's epochs lack the perplexity"
import json, math, sys
for e in json.load(open(sys.argv[1]))["epochs"]:
    assert abs(e["eval_perplexity"] - math.exp(e["eval_loss"])) < 1e-6 * e["eval_perplexity"], e
PY
[ "$(field "$dir/mlm/config.json" options task)" = '"mlm"' ] || fail "task not recorded"
# The load the steps ran under, in summary.json: read once its window holds half a second (these
# epochs are short, so at the run's last, waited out), CONTENDED in the printed line exactly then;
# steps.jsonl holds steps and evaluations only.
python3 - "$dir/mlm" <<'PY' || fail "the epochs' load: $(cat "$dir/mlm.out")"
import json, sys
epochs = json.load(open(sys.argv[1] + "/summary.json"))["epochs"]
lines = [l for l in open(sys.argv[1] + "/../mlm.out") if l.startswith("epoch ")]
assert len(epochs) == 2 and len(lines) == 2, (epochs, lines)
assert not any("load_other_cores_mean" in l for l in open(sys.argv[1] + "/steps.jsonl"))
for e, line in zip(epochs, lines):
    if e["load"] is None:
        assert "CONTENDED" not in line, line
        continue
    assert set(e["load"]) == {"other_cores_mean", "other_cores_max", "load_average_1m", "contended"}, e
    assert e["load"]["other_cores_max"] >= e["load"]["other_cores_mean"] - 1e-9, e
    assert ("CONTENDED: other processes used" in line) == e["load"]["contended"], (e, line)
assert epochs[-1]["load"] is not None or not open("/proc/stat").read(), "the last epoch is always read"
PY
# The report shows the scores a masked LM has (perplexity), never an absent accuracy as 0.
"$tach" report "$dir/mlm" >"$dir/report.out" 2>&1 || { cat "$dir/report.out"; fail "report of the mlm run"; }
grep -q "perplexity [0-9]" "$dir/mlm/report.html" || fail "the report's eval rows lack the perplexity"
! grep -q "accuracy 0.0000" "$dir/mlm/report.html" || fail "the report shows an absent accuracy as 0"

# Token classification on CoNLL tags: a new head of the sorted tags.
"$tach" train -m "$mlm" "${common[@]}" -d "$fixtures/token_classes/ner.conll" --task token-classification \
  --epochs 1 --run-id ner >"$dir/ner.out" 2>"$dir/ner.err" || { cat "$dir/ner.err"; fail "token classification run"; }
grep -q "Some weights of BertForTokenClassification were not initialized" "$dir/ner.err" || fail "no new-head note"
[ "$(field "$dir/ner/model/config.json" architectures)" = '["BertForTokenClassification"]' ] || fail "ner architecture"
[ "$(field "$dir/ner/model/config.json" id2label 0)" = '"B-LOC"' ] || fail "ner labels: $(field "$dir/ner/model/config.json" id2label)"

# The default task on a masked-LM checkpoint: a new sequence classifier, the MLM head left out.
"$tach" train -m "$mlm" "${common[@]}" -d "$fixtures/train/tiny.csv" --max-steps 2 --run-id cls \
  >"$dir/cls.out" 2>"$dir/cls.err" || { cat "$dir/cls.err"; fail "default task run"; }
grep -q "Some weights of BertForSequenceClassification were not initialized .*classifier" "$dir/cls.err" ||
  fail "no classifier note: $(cat "$dir/cls.err")"
grep -q "Some weights of the model checkpoint at $mlm were not used when initializing BertForSequenceClassification: \['cls.predictions" "$dir/cls.err" ||
  fail "no note of the masked-LM head left out: $(cat "$dir/cls.err")"
[ "$(field "$dir/cls/model/config.json" architectures)" = '["BertForSequenceClassification"]' ] || fail "cls architecture"

# Question answering on SQuAD records: windows of -s tokens, the checkpoint's qa_outputs trained.
"$tach" train -m "$fixtures/train_tasks/bert-qa-f32/model" -k "$fixtures/question_answering/tokenizer-tiny" \
  -d "$fixtures/train_tasks/squad_train.jsonl" --eval-dataset "$fixtures/train_tasks/squad_train.jsonl" \
  --task question-answering -s 24 --doc-stride 6 -b 4 --runs-dir "$dir" --no-progress --no-tensorboard --epochs 1 \
  --run-id qa >"$dir/qa.out" 2>"$dir/qa.err" || { cat "$dir/qa.err"; fail "question answering run"; }
grep -Eq "epoch 1: train loss [0-9.]+, eval loss [0-9.]+," "$dir/qa.out" || fail "qa epoch line: $(cat "$dir/qa.out")"
# Scores question answering's evaluation has not: left out of steps.jsonl, null in summary.json,
# blank in epoch_results.csv (never -1).
python3 - "$dir/qa" <<'PY' || fail "qa: a score it has not is written"
import csv, json, sys
for l in open(sys.argv[1] + "/steps.jsonl"):
    m = json.loads(l)["metrics"]
    assert "eval_accuracy" not in m and "eval_macro_f1" not in m, m
for e in json.load(open(sys.argv[1] + "/summary.json"))["epochs"]:
    assert e["eval_accuracy"] is None and e["eval_macro_f1"] is None, e
for row in csv.DictReader(open(sys.argv[1] + "/epoch_results.csv")):
    assert row["eval_accuracy"] == "" and row["eval_macro_f1"] == "" and row["eval_loss"] != "", row
PY
[ "$(field "$dir/qa/model/config.json" architectures)" = '["BertForQuestionAnswering"]' ] || fail "qa architecture"

# LoRA and QLoRA on the masked LM: adapters on the layers and the head's dense (PEFT's "dense"
# matches it), no module saved whole; the adapter's task_type null (PEFT has no masked-LM task).
for m in lora qlora; do
  "$tach" train -m "$mlm" "${common[@]}" -d "$fixtures/train/tiny.csv" --task mlm --method $m --max-steps 2 \
    --run-id "mlm-$m" >"$dir/$m.out" 2>"$dir/$m.err" || { cat "$dir/$m.err"; fail "mlm $m run"; }
  [ "$(field "$dir/mlm-$m/model/adapter_config.json" task_type)" = 'null' ] || fail "$m task_type"
  [ "$(field "$dir/mlm-$m/model/adapter_config.json" modules_to_save)" = '[]' ] || fail "$m modules_to_save"
  grep -q "13 adapters" "$dir/$m.err" || fail "$m adapters: $(cat "$dir/$m.err")"
done

# Bad input: a task tach does not know, a probability outside (0, 1).
if "$tach" train -m "$mlm" "${common[@]}" -d "$fixtures/train/tiny.csv" --task summarization 2>"$dir/bad.err"; then
  fail "an unknown task ran"
fi
grep -q -- "--task must be sequence-classification, mlm, token-classification or question-answering" "$dir/bad.err" ||
  fail "unknown task message: $(cat "$dir/bad.err")"
if "$tach" train -m "$mlm" "${common[@]}" -d "$fixtures/train/tiny.csv" --task mlm --mlm-probability 1.5 2>"$dir/bad.err"; then
  fail "--mlm-probability 1.5 ran"
fi
grep -q -- "--mlm-probability must be between 0 and 1" "$dir/bad.err" || fail "probability message: $(cat "$dir/bad.err")"
echo "PASS"
