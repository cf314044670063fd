#!/usr/bin/env bash
# What a new user's pass over train, eval, prune and shrink found, one case each
# (usage: newuser_findings.sh TACH FIXTURES_DIR WORK_DIR CASE):
#   tokenizer_vocab   -k naming a tokenizer larger than the model's vocabulary: a usage error naming
#                     both sizes, before any run directory (train, eval, prune --by importance;
#                     an encoder and a decoder)
#   notes_once        train's note of the task taken from the checkpoint's head is said once
#   split_flat        --split (--eval-split) on a CSV/JSONL file, which has no splits: a usage error in
#                     train, eval and prune --by importance, not the whole file read; a JSON split file
#                     still takes it
#   help_dtype        every inference command's --help says int8 is dynamic on the cpu, weight-only on
#                     cuda (not "for inference on the cpu" or dynamic only)
#   f16_on_cpu        --dtype f16 on the CPU: a usage error (exit 2) in classify, generate, fill-mask,
#                     answer, profile, as in bench
#   failed_runs_left  eval and bench --accuracy with a label the model lacks, and shrink --prune-by importance with bad
#                     calibration data, leave no run directory of their own (one given with --run-id
#                     that was there stays)
set -euo pipefail
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
case_name=$4
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
# run STATUS OUT_FILE ARGS...: the command's combined output in OUT_FILE, its status checked.
run() {
  local want=$1 out=$2
  shift 2
  set +e
  (cd "$work" && "$tach" "$@") >"$out" 2>&1
  local got=$?
  set -e
  [ "$got" = "$want" ] || { cat "$out"; fail "tach $* exited $got, want $want"; }
}
# nothing_left DIR: a refused command left no files under DIR.
nothing_left() { [ ! -e "$1" ] || [ -z "$(ls -A "$1")" ] || fail "a refused command left $(ls -R "$1")"; }
bert=$fx/encoders/bert-cls2-f32
wp=$fx/tokenizers/tiny-wordpiece
quiet=(--no-progress --no-tensorboard --runs-dir "$work/runs")

case $case_name in
tokenizer_vocab)
  big=$fx/tokenizers/mpnet  # 30526 tokens (added ones included); bert-cls2-f32 has 120
  want="usage error: -k $big has 30526 tokens (ids up to 30525), but $bert has embeddings for 120 (config.json's vocab_size)"
  run 2 "$work/train.out" train -m "$bert" -k "$big" -d "$fx/train/tiny.csv" --max-steps 1 "${quiet[@]}"
  grep -qF -- "$want" "$work/train.out" || fail "train: $(cat "$work/train.out")"
  run 2 "$work/eval.out" eval -m "$bert" -k "$big" -d "$fx/train/tiny.csv" --runs-dir "$work/runs"
  grep -qF -- "$want" "$work/eval.out" || fail "eval: $(cat "$work/eval.out")"
  run 2 "$work/prune.out" prune -m "$bert" -k "$big" -d "$fx/train/tiny.csv" --by importance --heads 0.5 \
    -o "$work/runs/pruned"
  grep -qF -- "$want" "$work/prune.out" || fail "prune: $(cat "$work/prune.out")"
  # A decoder (256 tokens) with a 2000-token BPE.
  llama=$fx/decoders/llama-lm-llama3rope-f32
  bpe=$fx/tokenizers/modernbert-bpe
  run 2 "$work/dec.out" prune -m "$llama" -k "$bpe" -d "$fx/train/tiny.csv" --by importance --heads 0.5 \
    -o "$work/runs/pruned-llama"
  grep -qF -- "-k $bpe has 2000 tokens (ids up to 1999), but $llama has embeddings for 256" "$work/dec.out" ||
    fail "decoder prune: $(cat "$work/dec.out")"
  run 2 "$work/dectrain.out" train -m "$fx/decoders/llama-cls-bias-f32" -k "$bpe" -d "$fx/train/tiny.csv" \
    --max-steps 1 "${quiet[@]}"
  grep -qF -- "-k $bpe has 2000 tokens" "$work/dectrain.out" || fail "decoder train: $(cat "$work/dectrain.out")"
  nothing_left "$work/runs"
  # The model's own tokenizer (it fits) still trains.
  run 0 "$work/fits.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --max-steps 1 "${quiet[@]}"
  ;;
notes_once)
  run 0 "$work/ner.out" train -m "$fx/heads/bert-tokcls-f32" -k "$fx/token_classes/tokenizer-wordpiece" \
    -d "$fx/token_classes/ner.jsonl" --max-steps 2 --run-id ner "${quiet[@]}"
  [ "$(grep -c -- "--task token-classification, from" "$work/ner.out")" = 1 ] || fail "said $(cat "$work/ner.out")"
  [ "$(grep -c -- "--task token-classification, from" "$work/runs/ner/run.log")" = 1 ] ||
    fail "run.log: $(cat "$work/runs/ner/run.log")"
  ;;
split_flat)
  want="--split validation: dataset $fx/train/tiny.csv is one file of rows with no splits"
  run 2 "$work/train.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --split validation --max-steps 1 "${quiet[@]}"
  grep -qF -- "$want" "$work/train.out" || fail "train: $(cat "$work/train.out")"
  run 2 "$work/evalsplit.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --eval-dataset "$fx/train/tiny.csv" \
    --eval-split test --max-steps 1 "${quiet[@]}"
  grep -qF -- "--eval-split test: dataset $fx/train/tiny.csv is one file" "$work/evalsplit.out" ||
    fail "--eval-split: $(cat "$work/evalsplit.out")"
  run 2 "$work/eval.out" eval -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --split validation --runs-dir "$work/runs"
  grep -qF -- "$want" "$work/eval.out" || fail "eval: $(cat "$work/eval.out")"
  run 2 "$work/prune.out" prune -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" --split validation --by importance \
    --heads 0.5 -o "$work/runs/pruned"
  grep -qF -- "$want" "$work/prune.out" || fail "prune: $(cat "$work/prune.out")"
  run 2 "$work/jsonl.out" eval -m "$fx/heads/bert-tokcls-f32" -k "$fx/token_classes/tokenizer-wordpiece" \
    -d "$fx/token_classes/ner.jsonl" --split validation --runs-dir "$work/runs"
  grep -qF -- "dataset $fx/token_classes/ner.jsonl is one file of rows with no splits" "$work/jsonl.out" ||
    fail "jsonl: $(cat "$work/jsonl.out")"
  nothing_left "$work/runs"
  run 0 "$work/splits.out" train -m "$bert" -k "$wp" -d "$fx/train/tiny_splits.json" --split train --max-steps 1 \
    "${quiet[@]}"
  ;;
help_dtype)
  for cmd in classify bench eval run fill-mask answer generate; do
    run 0 "$work/$cmd.out" "$cmd" --help
    grep -qF "int8 (the linears quantized: dynamically on the cpu, weight-only on cuda)" "$work/$cmd.out" ||
      fail "tach $cmd --help: $(grep -F -- --dtype "$work/$cmd.out")"
    ! grep -qF -e "for inference on the cpu" -e "int8 (dynamic quantization of the linears)" "$work/$cmd.out" ||
      fail "tach $cmd --help still says int8 is the cpu's alone"
  done
  ;;
f16_on_cpu)
  want="--dtype f16 computes on a GPU only (--device cuda)"
  run 2 "$work/classify.out" classify -m "$bert" -k "$wp" --text hello --dtype f16 --device cpu
  grep -qF -- "$want" "$work/classify.out" || fail "classify: $(cat "$work/classify.out")"
  run 2 "$work/generate.out" generate -m "$fx/decoders/llama-lm-llama3rope-f32" --ids "1 2 3" -n 2 --dtype f16 \
    --device cpu
  grep -qF -- "$want" "$work/generate.out" || fail "generate: $(cat "$work/generate.out")"
  run 2 "$work/fill.out" fill-mask -m "$bert" -k "$wp" --text "a [MASK]" --dtype f16
  grep -qF -- "$want" "$work/fill.out" || fail "fill-mask: $(cat "$work/fill.out")"
  run 2 "$work/profile.out" profile -m "$bert" --dtype f16 --device cpu -b 1 -s 8
  grep -qF -- "--dtype f16 computes on a GPU only" "$work/profile.out" || fail "profile: $(cat "$work/profile.out")"
  run 0 "$work/f32.out" classify -m "$bert" -k "$wp" --text hello --dtype f32 --device cpu
  ;;
failed_runs_left)
  printf 'text,label\nhello,7\n' >"$work/bad.csv"
  run 1 "$work/eval.out" eval -m "$bert" -k "$wp" -d "$work/bad.csv" --runs-dir "$work/runs"
  nothing_left "$work/runs"
  mkdir -p "$work/runs/mine"
  run 1 "$work/mine.out" eval -m "$bert" -k "$wp" -d "$work/bad.csv" --runs-dir "$work/runs" --run-id mine
  [ -d "$work/runs/mine" ] || fail "eval removed a directory that was there before it"
  rm -rf "$work/runs"
  run 1 "$work/bench.out" bench -m "$bert" -k "$wp" --accuracy -d "$work/bad.csv" -s 16 -b 1 --no-progress \
    --runs-dir "$work/runs"
  nothing_left "$work/runs"
  rm -rf "$work/runs"
  printf 'nothing,here\n' >"$work/nocols.csv"
  run 1 "$work/shrink.out" shrink -m "$bert" -k "$wp" -d "$fx/train/tiny.csv" -s 32 --prune heads:0.5 \
    --prune-by importance --calibration-data "$work/nocols.csv" --runs-dir "$work/runs"
  nothing_left "$work/runs"
  ;;
*)
  fail "unknown case $case_name"
  ;;
esac
echo "ok: $case_name"
