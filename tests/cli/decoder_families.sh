#!/usr/bin/env bash
# Every command on every decoder family tach builds, through the CLI, on the tiny fixtures that
# transformers wrote (tests/fixtures/decoders): classify (ids and text), eval, bench, profile,
# generate, train (full and LoRA), merge (the merged model classifies as the adapter does),
# estimate and info. The numbers themselves are checked against transformers and peft by the
# golden tests; this checks that each command takes each family end to end.
# Usage: decoder_families.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
tok=$fixtures/tokenizers/tiny-wordpiece
data=$fixtures/train/tiny.csv
quiet=(--no-progress --runs-dir "$dir/runs")

for name in llama-cls-bias-f32 mistral-cls-window4-f32 qwen3-cls-headdim16-f32 gemma3-cls-f32; do
  m=$fixtures/decoders/$name
  echo "== $name"
  "$tach" info -m "$m" | grep -q "labels"
  "$tach" classify -m "$m" --ids "5 17 33" --ids "9 88" > "$dir/ids.out"
  grep -q "LABEL_" "$dir/ids.out"
  "$tach" classify -m "$m" -k "$tok" --text "hello world" --text "unaffable" | grep -q "LABEL_"
  "$tach" eval -m "$m" -k "$tok" -d "$data" --label-column label --runs-dir "$dir/runs" | grep -qi "accuracy"
  "$tach" bench -m "$m" -b 1,2 -s 8 --runs 2 "${quiet[@]}" | grep -q "cpu .* f32"
  "$tach" profile -m "$m" -b 2 -s 8 --profiler-active 1 --overhead-steps 1 \
    --profiler-output-dir "$dir/profile-$name" > /dev/null
  test -s "$dir/profile-$name/trace.json"
  "$tach" train -m "$m" -k "$tok" -d "$data" --epochs 1 -b 4 "${quiet[@]}" --run-id "full-$name" > /dev/null
  test -s "$dir/runs/full-$name/model/model.safetensors"
  "$tach" train -m "$m" -k "$tok" -d "$data" --epochs 1 -b 4 --method lora --lr 1e-2 "${quiet[@]}" \
    --run-id "lora-$name" > /dev/null
  adapter=$dir/runs/lora-$name/model
  grep -q '"q_proj"' "$adapter/adapter_config.json"
  "$tach" merge -m "$m" --adapter "$adapter" -o "$dir/merged-$name" > /dev/null
  a=$("$tach" classify -m "$m" --adapter "$adapter" --ids "5 17 33" | grep -o 'LABEL_[0-9]*.*' | head -1)
  b=$("$tach" classify -m "$dir/merged-$name" --ids "5 17 33" | grep -o 'LABEL_[0-9]*.*' | head -1)
  [ "$a" = "$b" ] || { echo "merged model classifies as '$b', the adapter as '$a'"; exit 1; }
  "$tach" estimate -m "$m" --mode train-lora | grep -q "parameters"
done

for name in llama-lm-llama3rope-f32 mistral-lm-window4-f32 qwen3-lm-window-bf16 gemma3-lm-softcap-f32; do
  m=$fixtures/decoders/$name
  echo "== $name"
  "$tach" generate -m "$m" --ids "5 17 33 41 60 7" -n 6 --ignore-eos | grep -q "tokens"
  "$tach" bench -m "$m" -b 1 -s 16 --runs 2 "${quiet[@]}" | grep -q "causal-LM prefill"
done
echo "every command ran on every family"
