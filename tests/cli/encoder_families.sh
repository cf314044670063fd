#!/usr/bin/env bash
# Every command on the encoder families added through the family table (RoBERTa, XLM-RoBERTa, MPNet,
# ModernBERT),
# through the CLI, on the tiny fixtures transformers wrote (tests/fixtures/encoders): info,
# classify (ids and text), eval, bench, profile, train (full and LoRA), merge (the merged model
# classifies as the adapter does), QLoRA, embed on the bare models, and estimate. The numbers are checked
# against transformers by the golden tests; this checks that each command takes each family.
# Usage: encoder_families.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tok=$fixtures/tokenizers/tiny-wordpiece
data=$fixtures/train/tiny.csv
quiet=(--no-progress --runs-dir "$dir/runs")

# dir/name, the body's module in traces, a LoRA target the family's defaults hold, what info says of positions
for row in "encoders/roberta-cls2-f32 roberta query padding_idx" "encoders/xlm-roberta-cls3-bf16 roberta query padding_idx" \
           "encoders/mpnet-cls2-f32 mpnet q relative" "decoders/modernbert-cls-mean-f32 model Wqkv local.attention"; do
  read -r path module target positions <<< "$row"
  name=$(basename "$path")
  m=$fixtures/$path
  echo "== $name"
  "$tach" info -m "$m" | grep -q "$positions"
  "$tach" classify -m "$m" --ids "0 5 17 33 2" --ids "0 9 88 2" | grep -q "LABEL_"
  "$tach" classify -m "$m" -k "$tok" --text "hello world" --text "unaffable" | grep -q "LABEL_"
  "$tach" eval -m "$m" -k "$tok" -d "$data" --label-column label --runs-dir "$dir/runs" | grep -qi "accuracy"
  "$tach" bench -m "$m" -b 1,2 -s 8 --runs 2 "${quiet[@]}" | grep -q "cpu .* f32"
  "$tach" profile -m "$m" -b 2 -s 8 --profiler-active 1 --overhead-steps 1 \
    --profiler-output-dir "$dir/profile-$name" > /dev/null
  grep -q "\"$module" "$dir/profile-$name/trace.json"
  "$tach" train -m "$m" -k "$tok" -d "$data" --epochs 1 -b 4 "${quiet[@]}" --run-id "full-$name" > /dev/null
  test -s "$dir/runs/full-$name/model/model.safetensors"
  "$tach" train -m "$m" -k "$tok" -d "$data" --epochs 1 -b 4 --method lora --lr 1e-2 "${quiet[@]}" \
    --run-id "lora-$name" > /dev/null
  adapter=$dir/runs/lora-$name/model
  grep -q "\"$target\"" "$adapter/adapter_config.json"
  "$tach" merge -m "$m" --adapter "$adapter" -o "$dir/merged-$name" > /dev/null
  # A bf16 checkpoint merges into bf16 weights (as peft's merge_and_unload on a bf16 model): the
  # rounding moves the 4th decimal, so only the label is compared there.
  pattern='LABEL_[0-9]*.*'
  case $name in *bf16*) pattern='LABEL_[0-9]*' ;; esac
  a=$("$tach" classify -m "$m" --adapter "$adapter" --ids "0 5 17 33 2" | grep -o "$pattern" | head -1)
  b=$("$tach" classify -m "$dir/merged-$name" --ids "0 5 17 33 2" | grep -o "$pattern" | head -1)
  [ "$a" = "$b" ] || { echo "merged model classifies as '$b', the adapter as '$a'"; exit 1; }
  "$tach" train -m "$m" -k "$tok" -d "$data" --epochs 1 -b 4 --method qlora --lr 1e-2 "${quiet[@]}" \
    --run-id "qlora-$name" > /dev/null
  test -s "$dir/runs/qlora-$name/model/adapter_model.safetensors"
  "$tach" estimate -m "$m" --mode train-lora | grep -q "parameters"
done

for path in encoders/roberta-base-model-f32 encoders/xlm-roberta-base-model-f32 encoders/mpnet-base-model-f32 \
            decoders/modernbert-base-model-f32; do
  name=$(basename "$path")
  m=$fixtures/$path
  echo "== $name"
  "$tach" embed -m "$m" -k "$tok" --text "hello world" --text "unaffable" --output "$dir/$name.jsonl" > /dev/null
  test "$(wc -l < "$dir/$name.jsonl")" = 2
done
for preset in roberta-base xlm-roberta-base mpnet-base modernbert-base; do
  "$tach" estimate -m "preset:$preset" | grep -q "parameters"
done
# ModernBERT is bidirectional: generating is refused, by name.
if "$tach" generate -m "$fixtures/decoders/modernbert-base-model-f32" --ids "5 17" -n 2 > "$dir/gen.out" 2>&1; then
  echo "generate ran on a bidirectional encoder"; exit 1
fi
grep -q "bidirectional encoder" "$dir/gen.out"
echo "every command ran on every encoder family"
