#!/usr/bin/env bash
# tach prune --by importance through the binary: a run on labelled data, and a message naming what is
# wrong for each kind of bad calibration input: exit status 2 for the options, 1 for the data itself
# (as every command's data errors).
# usage: prune_importance.sh TACH FIXTURES_DIR WORK_DIR
set -euo pipefail
tach=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fx=$(cd "$2" && pwd)
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
bert=$fx/encoders/bert-cls2-f32
data=(-d "$fx/train/tiny.csv" -k "$fx/tokenizers/tiny-wordpiece")

out=$("$tach" prune -m "$bert" -o "$work/small" --heads 0.5 --by importance "${data[@]}" --calibration-samples 12) ||
  fail "prune exited $?"
echo "$out"
grep -q "removed 4 attention heads, 0 FFN neurons and 0 layers (BERT encoders, by importance)" <<< "$out" ||
  fail "summary line"
grep -q '"samples": 12' "$work/small/prune_scores.json" || fail "prune_scores.json names the samples"

expect_exit() {  # status, text, args...
  local want=$1 text=$2
  shift 2
  set +e
  err=$("$tach" prune -o "$work/bad" "$@" 2>&1)
  got=$?
  set -e
  [ "$got" = "$want" ] || fail "tach prune $* exited $got, want $want: $err"
  grep -qF -- "$text" <<< "$err" || fail "tach prune $*: want '$text' in: $err"
  [ ! -e "$work/bad" ] || fail "tach prune $* wrote $work/bad"
}
expect_exit 2 "--by importance needs labelled calibration data: -d DATASET" -m "$bert" --heads 0.5 --by importance
expect_exit 2 "--calibration-samples" -m "$bert" --by importance "${data[@]}" --calibration-samples 0
expect_exit 2 "--calibration-samples" -m "$bert" --by importance "${data[@]}" --calibration-samples -3
printf 'text\nhello world\n' > "$work/texts.csv"
expect_exit 1 "has no label column 'label' (its columns: text); name it with --label-column" \
  -m "$bert" --by importance -d "$work/texts.csv" -k "$fx/tokenizers/tiny-wordpiece"
expect_exit 2 "--calibration-samples is for --by importance; --by magnitude reads no data" -m "$bert" --calibration-samples 5
expect_exit 2 "is for --by importance; --by magnitude reads no data" -m "$bert" "${data[@]}"
expect_exit 2 ": calibration data is for --by importance; --by magnitude reads none" -m "$bert" -d "$fx/train/tiny.csv"
expect_exit 2 "--by gradient" -m "$bert" --by gradient
expect_exit 1 "has none (config.json's architecture: BertModel)" -m "$fx/encoders/bert-base-model-f32" \
  --by importance "${data[@]}"
echo "ok"
