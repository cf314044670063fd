#!/bin/sh
# -t/--threads above the machine's cores runs, and says on stderr that threads will share cores:
# once per command that takes it (classify, embed, generate, profile, bench, train, eval).
# usage: threads_above_cores.sh TACH WORK_DIR FIXTURES
set -eu
tach=$1
work=$2
fixtures=$3
rm -rf "$work"
mkdir -p "$work"
many=$(($(nproc) * 4))
want="warning: $many threads on $(nproc) cores"
check() {  # name, then the command's arguments
  name=$1
  shift
  if ! "$tach" "$@" >"$work/$name.out" 2>"$work/$name.err"; then
    echo "FAIL: tach $* exited non-zero"
    cat "$work/$name.err"
    exit 1
  fi
  grep -F "$want" "$work/$name.err" >/dev/null || { echo "FAIL: tach $* did not warn ($want)"; cat "$work/$name.err"; exit 1; }
  echo "ok: $name warns"
}
check classify classify -m preset:bert-tiny -b 1 -s 8 --repeat 2 -t "$many"
check embed embed -m "$fixtures/encoders/bert-base-model-f32" -k "$fixtures/tokenizers/tiny-wordpiece" --text hello \
  -t "$many"
check generate generate -m preset:qwen2-tiny --prompt-len 4 --max-new-tokens 2 -t "$many"
check profile profile -m preset:bert-tiny -b 1 -s 8 --overhead-steps 1 --profiler-output-dir "$work/profile" -t "$many"
check bench bench -m preset:bert-tiny -b 1 -s 8 --runs 3 --decode-tokens 0 --runs-dir "$work/runs" --run-id t -t "$many"
printf 'text,label\nfine,1\nbad,0\ngood,1\nawful,0\n' >"$work/tiny.csv"
check train train -m preset:bert-tiny -k "$fixtures/tokenizers/tiny-wordpiece" -d "$work/tiny.csv" --max-steps 2 -b 2 \
  --runs-dir "$work/train" --run-id t -t "$many"
check eval eval -m preset:bert-tiny -k "$fixtures/tokenizers/tiny-wordpiece" -d "$work/tiny.csv" --runs-dir "$work/runs" \
  --run-id e -t "$many"
# Within the cores: no warning.
"$tach" classify -m preset:bert-tiny -b 1 -s 8 --repeat 2 -t 1 >/dev/null 2>"$work/one.err"
if grep -F "threads on" "$work/one.err"; then echo "FAIL: -t 1 warned"; exit 1; fi
echo "ok"
