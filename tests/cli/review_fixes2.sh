#!/usr/bin/env bash
# Distillation and pruning options refused by name (tests/cmake/review_fixes2.cmake): a --distill-*
# option without --distill-from, a teacher dtype the device lacks, a teacher of another head named by
# its own architecture, and tach prune's --heads and --layers naming themselves and refusing duplicates.
# Usage: review_fixes2.sh path/to/tach fixtures_dir CASE
set -euo pipefail
tach=$1
fx=$2
case_name=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
common=(-k "$fx/tokenizers/tiny-wordpiece" -d "$fx/train/tiny.csv" -s 16 -b 4 --max-steps 1 --runs-dir "$dir/runs"
  --no-progress --no-tensorboard)

expect_exit() {  # status, text, command args...
  local want=$1 text=$2
  shift 2
  set +e
  err=$("$tach" "$@" 2>&1)
  got=$?
  set -e
  [ "$got" = "$want" ] || fail "tach $* exited $got, want $want: $err"
  grep -qF -- "$text" <<< "$err" || fail "tach $*: want '$text' in: $err"
}

case "$case_name" in
  distill_needs_teacher)
    for opt in "--distill-temperature 3" "--distill-alpha 0.7" "--distill-dtype bf16"; do
      # shellcheck disable=SC2086
      expect_exit 2 "${opt%% *} needs --distill-from" train -m "$fx/encoders/bert-cls2-f32" "${common[@]}" $opt
    done
    [ ! -e "$dir/runs" ] || fail "a refused run left a run directory"
    # From a --config file too.
    printf 'distill_alpha: 0.7\n' > "$dir/kd.yaml"
    expect_exit 2 "--distill-alpha 0.7 needs --distill-from" train -m "$fx/encoders/bert-cls2-f32" "${common[@]}" \
      --config "$dir/kd.yaml"
    ;;
  distill_dtype_device)
    # Named and refused before either model is read (neither exists).
    expect_exit 2 "--distill-dtype f16 is not supported on cpu (f32, bf16, int8, nf4)" train -m "$dir/no-student" \
      "${common[@]}" --distill-from "$dir/no-teacher" --distill-dtype f16
    ;;
  teacher_architecture)
    expect_exit 2 "(BertForQuestionAnswering) has no trained sequence-classification head" train \
      -m "$fx/encoders/bert-cls2-f32" "${common[@]}" --distill-from "$fx/distill/bert2-bert1-qa/teacher"
    ;;
  prune_lists)
    bert=$fx/encoders/bert-cls2-f32
    expect_exit 2 '--heads lists "9"; the model has layers 0 to 1' prune -m "$bert" -o "$dir/p" --heads '{"9": [0]}'
    expect_exit 2 '--heads lists head 0 of layer 0 twice' prune -m "$bert" -o "$dir/p" --heads '{"0": [0, 0]}'
    expect_exit 2 '--layers lists layer 0 twice' prune -m "$bert" -o "$dir/p" --layers 0,0
    expect_exit 2 '--layers lists "9"; the model has layers 0 to 1' prune -m "$bert" -o "$dir/p" --layers 9,
    [ ! -e "$dir/p" ] || fail "a refused prune wrote its output"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: $case_name"
