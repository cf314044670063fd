#!/usr/bin/env bash
# tach train --method qlora on the per-token heads of the families past BERT: a Llama token
# classifier, Mistral and ModernBERT question answering. Each run quantizes as many nn.Linear
# weights as bitsandbytes loads as Linear4bit (the count make_qlora_logits.py recorded; ModernBERT's
# fused Wqkv and Wi are one each), trains two steps and saves peft's adapter with the task's
# modules to save.
# Usage: qlora_tasks.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
common=(--method qlora --max-steps 2 -b 4 --runs-dir "$dir" --no-progress --no-tensorboard)
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v:=v[k] for k in sys.argv[2:]]; print(json.dumps(v))' "$@"; }

# case, tokenizer, data, task, extra flags, modules to save, peft task type
run() {
  local case=$1 tok=$2 data=$3 task=$4 extra=$5 to_save=$6 task_type=$7
  # shellcheck disable=SC2086
  "$tach" train -m "$fixtures/train_tasks/$case/model" -k "$tok" -d "$data" --task "$task" $extra "${common[@]}" \
    --run-id "$case" >"$dir/$case.out" 2>"$dir/$case.err" || { cat "$dir/$case.err"; fail "$case: qlora run"; }
  local want
  want=$(field "$fixtures/train_tasks_lora/$case/qlora_logits.json" linear4bit_modules)
  grep -q "QLoRA: $want frozen weight matrices in NF4" "$dir/$case.out" "$dir/$case.err" ||
    fail "$case: not bitsandbytes' $want Linear4bit: $(grep -h "QLoRA:" "$dir/$case.out" "$dir/$case.err")"
  test -s "$dir/$case/model/adapter_model.safetensors" || fail "$case: no adapter saved"
  [ "$(field "$dir/$case/model/adapter_config.json" modules_to_save)" = "$to_save" ] ||
    fail "$case: modules_to_save $(field "$dir/$case/model/adapter_config.json" modules_to_save)"
  [ "$(field "$dir/$case/model/adapter_config.json" task_type)" = "\"$task_type\"" ] || fail "$case: task_type"
  python3 - "$dir/$case/summary.json" <<'PY' || fail "$case: no NF4 bytes or a loss that is not finite"
import json, math, sys
s = json.load(open(sys.argv[1]))
assert s["nf4_weight_bytes"] > 0, s["nf4_weight_bytes"]
assert all(math.isfinite(e["train_loss"]) for e in s["epochs"]), s["epochs"]
PY
}

qa=(-s 24 --doc-stride 6)
run llama-token-cls5-f32 "$fixtures/token_classes/tokenizer-wordpiece" "$fixtures/token_classes/ner.conll" \
  token-classification "-s 32" '["classifier", "score"]' TOKEN_CLS
run mistral-qa-f32 "$fixtures/question_answering/tokenizer-tiny" "$fixtures/train_tasks/squad_train.jsonl" \
  question-answering "${qa[*]}" '["qa_outputs"]' QUESTION_ANS
run modernbert-qa-f32 "$fixtures/question_answering/tokenizer-tiny" "$fixtures/train_tasks/squad_train.jsonl" \
  question-answering "${qa[*]}" '["classifier", "qa_outputs"]' QUESTION_ANS
echo "PASS"
