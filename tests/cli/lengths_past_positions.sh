#!/bin/sh
# A grid where some sequence lengths are past the model's positions is refused before anything
# runs (exit 2, no run directory), naming the lengths past it, the limit and the lengths that fit:
# for tach bench and tach bench --train alike, and for a RoBERTa whose rows take 2 fewer tokens
# than its positions. A grid that fits still runs.
# usage: lengths_past_positions.sh TACH FIXTURES WORK_DIR
set -u
tach=$1
fixtures=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
failed=0
base="--runs 1 --warmup 0 --no-progress --no-tensorboard --runs-dir $work/runs"
expect() {  # expect RC WORD ARGS...: exit RC and WORD (a grep -E pattern) in the message
  rc_want=$1 word=$2
  shift 2
  out=$("$tach" "$@" </dev/null 2>&1)
  rc=$?
  if [ $rc -ne "$rc_want" ] || ! printf '%s' "$out" | grep -Eq -- "$word"; then
    echo "FAIL: tach $*: exit $rc, expected $rc_want with '$word': $out"
    failed=1
  else
    echo "ok: tach $*: exit $rc: $(printf '%s' "$out" | grep -E -- "$word" | head -1)"
  fi
}
expect 2 "sequence length 600 of -s 16,600 is past preset:bert-tiny's 512 positions \(max_position_embeddings\), so no point there could run: -s 16 fits; give lengths up to 512" \
  bench $base -m preset:bert-tiny -b 1 -s 16,600
expect 2 "sequence lengths 600,1000 of -s 16,600,32,1000 are past .* -s 16,32 fit" \
  bench $base -m preset:bert-tiny -b 1 -s 16,600,32,1000
expect 2 "sequence length 600 of -s 16,600 is past preset:bert-tiny's 512 positions" \
  bench $base --train -m preset:bert-tiny -b 1 -s 16,600
expect 2 "sequence length 31 of -s 16,31 is past .*32 positions \(max_position_embeddings\), of which a row takes 30.*-s 16 fits" \
  bench $base -m "$fixtures/encoders/roberta-cls2-f32" -b 1 -s 16,31
expect 2 "every sequence length \(-s 600\) is past preset:bert-tiny's 512 positions.*give lengths up to 512, e.g. -s 128" \
  run $base -m preset:bert-tiny -b 1 -s 600
if [ -e "$work/runs" ]; then
  echo "FAIL: a refused grid made a run directory: $(ls "$work/runs")"
  failed=1
fi
expect 0 "1 ok" bench $base -m "$fixtures/encoders/roberta-cls2-f32" -b 1 -s 30 --run-id fits
exit $failed
