#!/usr/bin/env bash
# Recovery fine-tuning of head-pruned encoders (config.json's pruned_heads; tests/cmake/pruned_training.cmake):
# tach train builds each layer with its kept heads, saves the smaller tensors with pruned_heads
# kept, and the saved model loads again; LoRA's adapters follow the pruned widths, as peft's on a
# transformers 4 pruned model; a pruned student distils from its unpruned teacher.
# Usage: train_pruned.sh path/to/tach fixtures_dir CASE
set -euo pipefail
tach=$1
fx=$2
case_name=$3
command -v python3 > /dev/null || { echo "skip: python3 (to read the saved files) is not installed"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common=(-k "$fx/tokenizers/tiny-wordpiece" -d "$fx/train/tiny.csv" -s 16 -b 4 --max-steps 3 --runs-dir "$dir"
  --no-progress --no-tensorboard)

# The saved tensors' shapes: "name [d0, d1]" per line, sorted.
shapes() { python3 -c '
import json, struct, sys
f = open(sys.argv[1], "rb"); n = struct.unpack("<Q", f.read(8))[0]
h = json.loads(f.read(n))
for k in sorted(h):
    if k != "__metadata__": print(k, h[k]["shape"])' "$1"; }
# Fails unless `file` holds tensor `name` of shape `shape` ("[8, 16]").
expect_shape() {
  local got
  got=$(shapes "$1" | awk -v n="$2" '$1 == n { $1 = ""; sub(/^ /, ""); print }')
  [ "$got" = "$3" ] || fail "$2 in $1 is '${got:-absent}', want $3"
}
pruned_heads() { python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1])).get("pruned_heads"), sort_keys=True))' "$1"; }

train() {  # run id, model, more flags...
  local id=$1 model=$2
  shift 2
  "$tach" train -m "$model" "${common[@]}" --run-id "$id" "$@" >"$dir/$id.out" 2>"$dir/$id.err" ||
    { cat "$dir/$id.out" "$dir/$id.err"; fail "tach train $id"; }
}

# The fixtures: 4 heads of 4 (C 16), layer 0 keeps 2 (heads 1 and 3 removed), layer 1 keeps 3.
check_pruned_model() {  # saved model dir, source dir, layer prefix, q name, o name
  local saved=$1 src=$2 layer=$3 q=$4 o=$5
  [ "$(pruned_heads "$saved/config.json")" = "$(pruned_heads "$src/config.json")" ] ||
    fail "config.json's pruned_heads $(pruned_heads "$saved/config.json"), want $(pruned_heads "$src/config.json")"
  expect_shape "$saved/model.safetensors" "${layer}0.$q.weight" "[8, 16]"
  expect_shape "$saved/model.safetensors" "${layer}0.$o.weight" "[16, 8]"
  expect_shape "$saved/model.safetensors" "${layer}1.$q.weight" "[12, 16]"
  expect_shape "$saved/model.safetensors" "${layer}1.$q.bias" "[12]"
  expect_shape "$saved/model.safetensors" "${layer}1.$o.weight" "[16, 12]"
  # tach loads it again.
  "$tach" classify -m "$saved" --ids "2 5 6 7 3" >"$dir/classify.out" 2>&1 ||
    { cat "$dir/classify.out"; fail "tach classify cannot load the saved model"; }
}

case "$case_name" in
  full)
    # Full fine-tuning, eager, then fused with gradient checkpointing, on each family.
    train bert "$fx/prune/bert-pruned"
    check_pruned_model "$dir/bert/model" "$fx/prune/bert-pruned" bert.encoder.layer. attention.self.query \
      attention.output.dense
    train distilbert "$fx/prune/distilbert-pruned" --exec fused --gradient-checkpointing
    check_pruned_model "$dir/distilbert/model" "$fx/prune/distilbert-pruned" distilbert.transformer.layer. \
      attention.q_lin attention.out_lin
    train roberta "$fx/prune/roberta-pruned" --exec fused
    check_pruned_model "$dir/roberta/model" "$fx/prune/roberta-pruned" roberta.encoder.layer. attention.self.query \
      attention.output.dense
    ;;
  tasks)
    # The per-token heads: every layer runs on every token.
    tok=(-k "$fx/token_classes/tokenizer-wordpiece" -s 16 -b 4 --max-steps 2 --runs-dir "$dir" --no-progress
      --no-tensorboard)
    "$tach" train -m "$fx/prune/bert-pruned" "${tok[@]}" -d "$fx/token_classes/ner.conll" --task token-classification \
      --run-id ner >"$dir/ner.out" 2>&1 || { cat "$dir/ner.out"; fail "token classification"; }
    expect_shape "$dir/ner/model/model.safetensors" bert.encoder.layer.0.attention.self.key.weight "[8, 16]"
    "$tach" train -m "$fx/prune/roberta-pruned" "${tok[@]}" -d "$fx/train/tiny.csv" --task mlm --gradient-checkpointing \
      --run-id mlm >"$dir/mlm.out" 2>&1 || { cat "$dir/mlm.out"; fail "masked LM"; }
    expect_shape "$dir/mlm/model/model.safetensors" roberta.encoder.layer.1.attention.output.dense.weight "[16, 12]"
    [ "$(pruned_heads "$dir/mlm/model/config.json")" = '{"0": [1, 3], "1": [2]}' ] || fail "mlm lost pruned_heads"
    ;;
  lora)
    # The adapters' shapes follow each layer's width: q/k/v's B [A, r], the output's A [r, A].
    train lora "$fx/prune/bert-pruned" --method lora --lora-r 4
    adapter=$dir/lora/model/adapter_model.safetensors
    p=base_model.model.bert.encoder.layer.
    expect_shape "$adapter" "${p}0.attention.self.query.lora_A.weight" "[4, 16]"
    expect_shape "$adapter" "${p}0.attention.self.query.lora_B.weight" "[8, 4]"
    expect_shape "$adapter" "${p}1.attention.self.value.lora_B.weight" "[12, 4]"
    expect_shape "$adapter" "${p}0.attention.output.dense.lora_A.weight" "[4, 8]"
    expect_shape "$adapter" "${p}1.attention.output.dense.lora_A.weight" "[4, 12]"
    expect_shape "$adapter" "${p}1.attention.output.dense.lora_B.weight" "[16, 4]"
    # Merged into the pruned base, it is a pruned checkpoint tach loads.
    "$tach" merge -m "$fx/prune/bert-pruned" --adapter "$dir/lora/model" -o "$dir/merged" >"$dir/merge.out" 2>&1 ||
      { cat "$dir/merge.out"; fail "tach merge"; }
    check_pruned_model "$dir/merged" "$fx/prune/bert-pruned" bert.encoder.layer. attention.self.query \
      attention.output.dense
    # QLoRA: the pruned q|k|v and output weights in NF4.
    train qlora "$fx/prune/distilbert-pruned" --method qlora --lora-r 4
    expect_shape "$dir/qlora/model/adapter_model.safetensors" \
      base_model.model.distilbert.transformer.layer.0.attention.out_lin.lora_A.weight "[4, 8]"
    ;;
  distill)
    # The pruned student learns from the unpruned model it was cut from (here: one of its size).
    train kd "$fx/prune/bert-pruned" --distill-from "$fx/encoders/bert-cls2-f32" --distill-temperature 2
    check_pruned_model "$dir/kd/model" "$fx/prune/bert-pruned" bert.encoder.layer. attention.self.query \
      attention.output.dense
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $case_name"
