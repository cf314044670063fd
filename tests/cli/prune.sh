#!/usr/bin/env bash
# tach prune through the binary: what it prints and writes, and its exit status on bad input
# (2 for a bad option value, 1 for a model it cannot prune).
# usage: prune.sh TACH FIXTURES_DIR WORK_DIR
set -euo pipefail
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
bert=$fx/encoders/bert-cls2-f32

out=$("$tach" prune -m "$bert" -o "$work/small" --heads 0.25 --ffn 0.5 --layers 1,) || fail "prune exited $?"
echo "$out"
grep -q "removed 1 attention head, 20 FFN neurons and 1 layer (BERT encoders, by magnitude)" <<< "$out" || fail "summary line"
grep -q "heads           8 -> 3" <<< "$out" || fail "heads line"
grep -q "pruned_heads" <<< "$out" || fail "the note on pruned_heads"
for f in config.json model.safetensors prune_scores.json prune_summary.json; do
  [ -s "$work/small/$f" ] || fail "no $f"
done
# The pruned model runs like any other.
"$tach" classify -m "$work/small" --ids "101 7 19 102" > /dev/null || fail "classify on the pruned model"

# A decoder: whole key/value groups (0.3 of 2 rounds to 1, said in a note), FFN neurons and a layer;
# the pruned model classifies and benchmarks like any other.
llama=$fx/decoders/llama-cls-bias-f32
out=$("$tach" prune -m "$llama" -o "$work/llama" --heads 0.3 --ffn 0.25 --layers 1) || fail "prune llama exited $?"
echo "$out"
grep -q "removed 4 attention heads, 24 FFN neurons and 1 layer (Llama decoders" <<< "$out" || fail "llama summary line"
grep -q "rounds to whole key/value groups: 1 of 2 per layer" <<< "$out" || fail "the note on rounding to groups"
grep -q "heads           12 -> 4" <<< "$out" || fail "llama heads line"
"$tach" classify -m "$work/llama" --ids "5 17 33 41" > /dev/null || fail "classify on the pruned Llama"
"$tach" bench -m "$work/llama" -b 1 -s 8 --runs 2 --warmup 0 --no-progress --no-tensorboard \
  --runs-dir "$work/runs" > /dev/null || fail "bench on the pruned Llama"
# ModernBERT: FFN and layer 1 (global_attn_every_n_layers would make the kept layer 2 local: layer_types).
"$tach" prune -m "$fx/decoders/modernbert-cls-mean-f32" -o "$work/modernbert" --ffn 0.25 --layers 1, > /dev/null ||
  fail "prune modernbert"
"$tach" classify -m "$work/modernbert" --ids "5 17 33 41" > /dev/null || fail "classify on the pruned ModernBERT"

# Removing nothing: the files as they were.
"$tach" prune -m "$bert" -o "$work/same" > "$work/same.txt" || fail "prune with nothing to remove"
grep -q "nothing to remove" "$work/same.txt" || fail "nothing-to-remove line"
cmp "$bert/model.safetensors" "$work/same/model.safetensors" || fail "weights changed"
cmp "$bert/config.json" "$work/same/config.json" || fail "config changed"

expect_exit() {  # status, text, args...
  local want=$1 text=$2
  shift 2
  set +e
  err=$("$tach" prune "$@" 2>&1)
  got=$?
  set -e
  [ "$got" = "$want" ] || fail "tach prune $* exited $got, want $want: $err"
  grep -qF -- "$text" <<< "$err" || fail "tach prune $*: want '$text' in: $err"
  [ ! -e "$work/bad" ] || fail "tach prune $* wrote $work/bad"
}
expect_exit 2 "--heads must be a fraction in [0, 1), got 1" -m "$bert" -o "$work/bad" --heads 1
expect_exit 2 "--heads x: must be a fraction in [0, 1) or a list" -m "$bert" -o "$work/bad" --heads x
expect_exit 2 "--ffn" -m "$bert" -o "$work/bad" --ffn 1.5
expect_exit 2 "removes all 4 heads of layer 0; a layer keeps at least one" -m "$bert" -o "$work/bad" --heads 0.9
expect_exit 2 "removes every head of layer 1" -m "$bert" -o "$work/bad" --heads '{"1": [0, 1, 2, 3]}'
expect_exit 1 "MPNet encoders (all-mpnet-base-v2) cannot be written with fewer attention heads" \
  -m "$fx/encoders/mpnet-cls2-f32" -o "$work/bad" --heads 0.5
expect_exit 1 "ModernBERT encoders (gte-modernbert, modernbert-embed) cannot be written with fewer attention heads" \
  -m "$fx/decoders/modernbert-cls-mean-f32" -o "$work/bad" --heads 0.5
expect_exit 2 "removes all 1 key/value groups of each layer" -m "$fx/decoders/qwen2-cls-kv1-f32" -o "$work/bad" --heads 0.5
expect_exit 2 "--heads takes a fraction for Llama decoders" -m "$fx/decoders/llama-cls-bias-f32" -o "$work/bad" \
  --heads '{"0": [1]}'
echo "ok"
