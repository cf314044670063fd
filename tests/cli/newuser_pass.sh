#!/usr/bin/env bash
# What a new user's pass over tach prune -> train -> shrink, bench --accuracy and run -d found, one
# case each (usage: newuser_pass.sh TACH FIXTURES_DIR WORK_DIR CASE):
#   max_length        train -s past the model's positions: a usage error before any run directory;
#                     left out, the default fits the model (said)
#   task_from_head    train without --task on a token-classification or question-answering
#                     checkpoint trains its own head (said); --task given wins, saying what the
#                     checkpoint's head becomes
#   option_names      messages name only options of the command run (or the command that has them)
#   data_exit_codes   one bad data file: exit 1 in train, eval, bench --accuracy, run -d, shrink, prune
#   distill_mix       a distilled run labels its loss as the mix, with alpha, T and the task loss
#   prune_scored      prune --by importance prints what it scored and keeps it in prune_summary.json
#   teacher_vocab     a teacher whose tokenizer has the student's size but other tokens is refused
#                     (tach train, tach profile --train)
#   pruned_again      prune --by importance and --by magnitude on an already head-pruned model
set -euo pipefail
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
case_name=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v:=v[k] for k in sys.argv[2:]]; print(json.dumps(v))' "$@"; }
# run STATUS OUT_FILE ARGS...: the command's combined output in OUT_FILE, its status checked.
run() {
  local want=$1 out=$2
  shift 2
  set +e
  "$tach" "$@" >"$out" 2>&1
  local got=$?
  set -e
  [ "$got" = "$want" ] || { cat "$out"; fail "tach $* exited $got, want $want"; }
}
bert=$fx/encoders/bert-cls2-f32
wp=$fx/tokenizers/tiny-wordpiece
quiet=(--no-progress --no-tensorboard --runs-dir "$work/runs")

case $case_name in
max_length)
  # Padded to 64 tokens on a model with 32 positions: before, the first step failed and left its run.
  run 2 "$work/past.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" -s 64 --padding max_length \
    --max-steps 2 "${quiet[@]}"
  grep -qF -- "usage error: --max-length 64 is past $bert's 32 positions (the tokens a row can hold): give --max-length 32 or less" \
    "$work/past.out" || { cat "$work/past.out"; fail "the message does not name the limit"; }
  [ ! -e "$work/runs" ] || [ -z "$(ls -A "$work/runs")" ] || fail "a refused run left $(ls "$work/runs")"
  run 2 "$work/eval.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --eval-dataset "$fx/train/tiny.csv" \
    --eval-max-length 40 --max-steps 2 "${quiet[@]}"
  grep -qF -- "--eval-max-length 40 is past $bert's 32 positions" "$work/eval.out" || fail "eval length: $(cat "$work/eval.out")"
  # Left out: the default 128 fits the model, said once, and the run records 32.
  run 0 "$work/default.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --padding max_length --max-steps 2 \
    --run-id default "${quiet[@]}"
  grep -qF "rows of at most 32 tokens, $bert's 32 positions (the tokens a row can hold), not the default 128" \
    "$work/default.out" || fail "no note of the fitted default: $(cat "$work/default.out")"
  [ "$(field "$work/runs/default/config.json" options max_length)" = 32 ] || fail "config.json's max_length"
  ;;
task_from_head)
  tokcls=$fx/train_tasks/bert-token-cls5-f32/model
  qa=$fx/train_tasks/bert-qa-f32/model
  run 0 "$work/ner.out" train -m "$tokcls" -k "$fx/token_classes/tokenizer-wordpiece" -d "$fx/token_classes/ner.conll" \
    --max-steps 2 --run-id ner "${quiet[@]}"
  grep -qF "tach: --task token-classification, from $tokcls's own head (config.json's architecture: BertForTokenClassification), which trains; --task sequence-classification trains a new sequence classifier instead" \
    "$work/ner.out" || fail "no line saying the task came from the head: $(cat "$work/ner.out")"
  [ "$(field "$work/runs/ner/config.json" options task)" = '"token-classification"' ] || fail "ner task recorded"
  [ "$(field "$work/runs/ner/model/config.json" architectures)" = '["BertForTokenClassification"]' ] || fail "ner saved"
  ! grep -q "were not initialized" "$work/ner.out" || fail "the checkpoint's own head was replaced: $(cat "$work/ner.out")"
  # Question answering, with run_qa.py's windows fitted to the model's 32 positions.
  run 0 "$work/qa.out" train -m "$qa" -k "$fx/question_answering/tokenizer-tiny" -d "$fx/train_tasks/squad_train.jsonl" \
    --max-steps 2 --run-id qa "${quiet[@]}"
  grep -qF -- "--task question-answering, from $qa's own head (config.json's architecture: BertForQuestionAnswering)" \
    "$work/qa.out" || fail "qa: no line saying the task came from the head: $(cat "$work/qa.out")"
  grep -qF "question-answering windows of 32 tokens, $qa's 32 positions (the tokens a row can hold), not the default 384; --doc-stride 16" \
    "$work/qa.out" || fail "qa windows: $(cat "$work/qa.out")"
  [ "$(field "$work/runs/qa/model/config.json" architectures)" = '["BertForQuestionAnswering"]' ] || fail "qa saved"
  # --task given wins; the checkpoint's own head is said to be left out.
  run 0 "$work/cls.out" train -m "$tokcls" -k "$fx/token_classes/tokenizer-wordpiece" -d "$fx/train/tiny.csv" \
    --task sequence-classification --max-steps 2 --run-id cls "${quiet[@]}"
  grep -qF -- "--task sequence-classification on $tokcls, published with a token-classification head (config.json's architecture: BertForTokenClassification): that head is left out (not trained, not saved) and a new sequence-classification head is initialised from --seed 42" \
    "$work/cls.out" || fail "no line saying what became of the head: $(cat "$work/cls.out")"
  [ "$(field "$work/runs/cls/model/config.json" architectures)" = '["BertForSequenceClassification"]' ] || fail "cls saved"
  # A masked LM keeps the default: a new sequence classifier, and no line about a task from the head.
  run 0 "$work/mlm.out" train -m "$fx/train_tasks/bert-mlm-f32/model" -k "$fx/token_classes/tokenizer-wordpiece" \
    -d "$fx/train/tiny.csv" --max-steps 1 --run-id mlm "${quiet[@]}"
  ! grep -q "own head" "$work/mlm.out" || fail "a masked LM's task taken from its head"
  [ "$(field "$work/runs/mlm/config.json" options task)" = '"sequence-classification"' ] || fail "mlm default task"
  ;;
option_names)
  tokcls=$fx/heads/bert-tokcls-f32
  # bench reads tagged words with tach eval's reader: --tag-column is eval's, and the message says so.
  run 1 "$work/bench.out" bench -m "$tokcls" -k "$fx/token_classes/tokenizer-wordpiece" -d "$fx/train/tiny.csv" \
    --accuracy -s 16 -b 1 --runs 2 --device cpu "${quiet[@]}"
  grep -q "tiny.csv" "$work/bench.out" || fail "bench: $(cat "$work/bench.out")"
  ! grep -qE "(^|[^l] )\(?--tag-column" "$work/bench.out" || fail "bench names --tag-column as its own: $(cat "$work/bench.out")"
  # prune has no --task: its messages name the model that reads the file instead.
  run 1 "$work/prune.out" prune -m "$fx/train_tasks/bert-token-cls5-f32/model" -o "$work/pruned" --heads 0.5 \
    --by importance -d "$fx/train/tiny.csv" -k "$fx/token_classes/tokenizer-wordpiece"
  grep -qF "which a sequence classifier reads: -m with a sequence-classification model)" "$work/prune.out" ||
    fail "prune: $(cat "$work/prune.out")"
  ! grep -qE "reads it: .*--task [a-z-]+ (reads|\))|: --task sequence-classification" "$work/prune.out" ||
    fail "prune names --task as its own: $(cat "$work/prune.out")"
  run 1 "$work/prune-qa.out" prune -m "$fx/train_tasks/bert-qa-f32/model" -o "$work/pruned" --heads 0.5 \
    --by importance -d "$fx/token_classes/ner.conll" -k "$fx/question_answering/tokenizer-tiny"
  grep -qF "this file is CoNLL text, which a token classifier reads, not SQuAD-format data" "$work/prune-qa.out" &&
    grep -qF -- "-m with a token-classification model reads it" "$work/prune-qa.out" || fail "prune qa: $(cat "$work/prune-qa.out")"
  ;;
data_exit_codes)
  # SQuAD questions given to a sequence classifier: every command says so, with exit status 1.
  squad=$fx/question_answering/squad-v1.json
  run 1 "$work/train.out" train -m "$bert" -k "$wp" -d "$squad" -s 16 --max-steps 1 "${quiet[@]}"
  run 1 "$work/eval.out" eval -m "$bert" -k "$wp" -d "$squad" -s 16
  run 1 "$work/bench.out" bench -m "$bert" -k "$wp" -d "$squad" --accuracy -s 16 -b 1 --runs 2 --device cpu "${quiet[@]}"
  run 1 "$work/run.out" run -m "$bert" -k "$wp" -d "$squad" -s 16 -b 1 --runs 2 --device cpu "${quiet[@]}"
  run 1 "$work/shrink.out" shrink -m "$bert" -k "$wp" -d "$squad" --dtype f32 -s 16 -b 1 --runs 2 --device cpu \
    --runs-dir "$work/runs" --no-progress
  run 1 "$work/prune.out" prune -m "$bert" -o "$work/pruned" --heads 0.5 --by importance -d "$squad" -k "$wp"
  for c in train eval bench run shrink prune; do
    grep -q "SQuAD" "$work/$c.out" || fail "$c does not say what the file is: $(cat "$work/$c.out")"
  done
  # The label column missing: exit 1 as well (the data's), in prune as in train.
  printf 'text\nhello world\n' >"$work/texts.csv"
  run 1 "$work/train-nolabel.out" train -m "$bert" -k "$wp" -d "$work/texts.csv" -s 16 --max-steps 1 "${quiet[@]}"
  run 1 "$work/prune-nolabel.out" prune -m "$bert" -o "$work/pruned" --heads 0.5 --by importance -d "$work/texts.csv" -k "$wp"
  # The options that name the data stay usage errors.
  run 2 "$work/prune-nodata.out" prune -m "$bert" -o "$work/pruned" --heads 0.5 --by importance
  ;;
distill_mix)
  run 0 "$work/kd.out" train -m "$fx/encoders/distilbert-cls2-f32" -k "$wp" -d "$fx/train/tiny.csv" -s 16 -b 4 \
    --max-steps 4 --epochs 2 --distill-from "$bert" --distill-alpha 0.7 --distill-temperature 3 --run-id kd \
    --runs-dir "$work/runs" --no-tensorboard
  grep -qF "train loss = distillation mix 0.7 x T^2 KL + 0.3 x task loss, T 3 (eval loss: the task loss alone)" \
    "$work/kd.out" || fail "the mix is not said: $(cat "$work/kd.out")"
  grep -Eq "^epoch 1: train loss \(mix\) [0-9.]+, task loss [0-9.]+, T\^2 KL [0-9.]+" "$work/kd.out" ||
    fail "the epoch line: $(cat "$work/kd.out")"
  grep -Eq "mix loss [0-9.]+  task loss [0-9.]+" "$work/kd.out" || fail "the progress line: $(cat "$work/kd.out")"
  grep -qF "train loss (mix)" "$work/runs/kd/run.log" || fail "run.log lacks the label"
  python3 - "$work/runs/kd" <<'PY' || fail "epoch_results.csv or summary.json"
import csv, json, sys
run = sys.argv[1]
steps = [json.loads(l)["metrics"] for l in open(run + "/steps.jsonl") if "step_ms" in l]
rows = list(csv.DictReader(open(run + "/epoch_results.csv")))
s = json.load(open(run + "/summary.json"))
assert len(rows) == len(s["epochs"]) >= 1, (rows, s["epochs"])
per_epoch = len(steps) // len(rows)
for i, (row, e) in enumerate(zip(rows, s["epochs"])):
    mine = steps[i * per_epoch:(i + 1) * per_epoch]
    task = sum(m["task_loss"] for m in mine) / len(mine)
    kl = sum(m["distill_loss"] for m in mine) / len(mine)
    assert abs(float(row["train_task_loss"]) - task) < 1e-5 and abs(float(row["train_distill_loss"]) - kl) < 1e-5, row
    assert abs(float(row["train_loss"]) - (0.7 * kl + 0.3 * task)) < 1e-5, row
    assert abs(e["train_task_loss"] - task) < 1e-9 and abs(e["train_distill_loss"] - kl) < 1e-9, e
assert "the mix" in s["distillation"]["train_loss"], s["distillation"]
PY
  # Without a teacher the labels are the plain ones.
  run 0 "$work/plain.out" train -m "$fx/encoders/distilbert-cls2-f32" -k "$wp" -d "$fx/train/tiny.csv" -s 16 -b 4 \
    --max-steps 2 --run-id plain --runs-dir "$work/runs" --no-tensorboard
  ! grep -q "mix loss\|(mix)\|distillation mix\|task loss" "$work/plain.out" || fail "a run without a teacher speaks of a mix"
  [ "$(head -1 "$work/runs/plain/epoch_results.csv" | tr ',' '\n' | grep -c task_loss)" = 0 ] || fail "plain csv columns"
  ;;
prune_scored)
  run 0 "$work/prune.out" prune -m "$bert" -o "$work/small" --heads 0.5 --by importance -d "$fx/train/tiny.csv" -k "$wp" \
    --calibration-samples 12
  grep -Eq "^importance scored on 12 examples of $fx/train/tiny.csv: 12 rows, [0-9]+ tokens$" "$work/prune.out" ||
    fail "no line of what was scored: $(cat "$work/prune.out")"
  grep -Eq "^  the sequence-classification head's loss, cross-entropy: [0-9.]+ \(mean over the rows scored\)$" "$work/prune.out" ||
    fail "no line of the head's loss: $(cat "$work/prune.out")"
  python3 - "$work/small" <<'PY' || fail "prune_summary.json's calibration"
import json, sys
s = json.load(open(sys.argv[1] + "/prune_summary.json"))
c = s["calibration"]
assert c["samples"] == 12 and c["rows"] == 12 and c["head"] == "sequence-classification", c
assert c["loss"] == "single_label_classification" and 0 < c["mean_loss"] < 10, c
assert c == json.load(open(sys.argv[1] + "/prune_scores.json"))["calibration"], c
PY
  run 0 "$work/magnitude.out" prune -m "$bert" -o "$work/small-m" --heads 0.5
  ! grep -q "^importance" "$work/magnitude.out" || fail "--by magnitude prints a calibration"
  [ "$(field "$work/small-m/prune_summary.json" calibration 2>/dev/null || echo none)" = none ] || fail "magnitude summary"
  ;;
teacher_vocab)
  student=(-m "$fx/encoders/distilbert-cls2-f32" -k "$wp" -d "$fx/train/tiny.csv" -s 16 -b 4 --max-steps 1)
  mkdir -p "$work/teacher-same" "$work/teacher-other"
  cp "$bert"/config.json "$bert"/model.safetensors "$work/teacher-same/"
  cp "$bert"/config.json "$bert"/model.safetensors "$work/teacher-other/"
  cp "$wp/tokenizer.json" "$work/teacher-same/"
  # The same size, 9 tokens, two of them swapped: 'hello' and 'world' trade ids.
  python3 - "$wp/tokenizer.json" "$work/teacher-other/tokenizer.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
v = t["model"]["vocab"]
v["hello"], v["world"] = v["world"], v["hello"]
json.dump(t, open(sys.argv[2], "w"))
PY
  run 0 "$work/same.out" train "${student[@]}" --distill-from "$work/teacher-same" --run-id same "${quiet[@]}"
  run 2 "$work/other.out" train "${student[@]}" --distill-from "$work/teacher-other" --run-id other "${quiet[@]}"
  grep -qF "have the same size, 9 tokens, but 2 of the ids name other tokens (id 6 is 'world' in the teacher's, 'hello' in the student's)" \
    "$work/other.out" || fail "the vocabularies' difference: $(cat "$work/other.out")"
  [ ! -e "$work/runs/other" ] || fail "a refused teacher left a run directory"
  # tach profile --train compares them too, where the student's directory ships its tokenizer.
  mkdir -p "$work/student"
  cp "$fx/encoders/distilbert-cls2-f32"/config.json "$fx/encoders/distilbert-cls2-f32"/model.safetensors "$wp/tokenizer.json" \
    "$work/student/"
  run 2 "$work/profile.out" profile --train -m "$work/student" --distill-from "$work/teacher-other" -b 2 -s 8 \
    --profiler-output-dir "$work/profile"
  grep -qF "but 2 of the ids name other tokens" "$work/profile.out" || fail "profile --train: $(cat "$work/profile.out")"
  ;;
pruned_again)
  pruned=$fx/prune/bert-pruned  # pruned_heads {"0": [1, 3], "1": [2]}
  for by in importance magnitude; do
    data=()
    [ $by = magnitude ] || data=(-d "$fx/train/tiny.csv" -k "$wp")
    run 0 "$work/$by.out" prune -m "$pruned" -o "$work/$by" --heads 0.4 --by $by "${data[@]}"
    grep -qF "removed 2 attention heads" "$work/$by.out" || fail "$by: $(cat "$work/$by.out")"
    python3 - "$work/$by" <<'PY' || fail "$by: the scores or pruned_heads"
import json, sys
d = sys.argv[1]
heads = json.load(open(d + "/prune_scores.json"))["heads"]
assert [[h is None for h in layer] for layer in heads] == [[False, True, False, True], [False, False, True, False]], heads
pruned = json.load(open(d + "/config.json"))["pruned_heads"]
assert set(pruned["0"]) > {1, 3} and set(pruned["1"]) > {2} and len(pruned["0"]) == 3 and len(pruned["1"]) == 2, pruned
PY
  done
  ;;
*) fail "no case $case_name" ;;
esac
echo "ok: $case_name"
