#!/usr/bin/env bash
# tach train killed with SIGKILL midway, then resumed, ends with the same weights, byte for byte,
# as an uninterrupted run (same data order, same dropout masks, same optimizer state), and its
# steps.jsonl holds every step exactly once. Usage: train_kill_resume.sh path/to/tach fixtures_dir
# [more tach train flags, e.g. --method qlora: then the saved adapter is compared]
# RESUME_MODEL: the model to train, relative to fixtures_dir (default encoders/bert-cls2-f32).
set -euo pipefail
tach=$1
fixtures=$2
shift 2
model=$fixtures/${RESUME_MODEL:-encoders/bert-cls2-f32}
dir=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
args=(train -m "$model" -k "$fixtures/tokenizers/tiny-wordpiece" -d "$fixtures/train/tiny.csv"
      --epochs 25 -b 4 --lr 1e-3 --warmup-ratio 0.1 --weight-decay 0.01 --save-every 7 --seed 5 --runs-dir "$dir"
      --no-progress "$@")

"$tach" "${args[@]}" --run-id full >/dev/null 2>&1
total=$(wc -l < "$dir/full/steps.jsonl")
"$tach" "${args[@]}" --run-id killed >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  n=0
  [ -f "$dir/killed/steps.jsonl" ] && n=$(wc -l < "$dir/killed/steps.jsonl")
  [ "$n" -ge 100 ] && ls -d "$dir"/killed/checkpoint-* >/dev/null 2>&1 && break
  sleep 0.01
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
if [ -d "$dir/killed/model" ]; then echo "the run finished before the kill: nothing was tested"; exit 1; fi
echo "killed after $(wc -l < "$dir/killed/steps.jsonl") of $total logged steps ($(ls -d "$dir"/killed/checkpoint-* | xargs -n1 basename))"

"$tach" train --resume "$dir/killed" --no-progress | tee "$dir/resume.out"
grep -q "resumed after step" "$dir/resume.out"
saved=model.safetensors
[ -f "$dir/full/model/adapter_model.safetensors" ] && saved=adapter_model.safetensors
cmp "$dir/full/model/$saved" "$dir/killed/model/$saved"
steps() { grep -o '"step":[0-9]*}$' "$1" | sort -t: -k2 -n | uniq -c | awk '{print $1}' | sort -u; }
# Each step appears once (plus once more where an evaluation was logged: none here).
[ "$(steps "$dir/killed/steps.jsonl")" = "1" ] || { echo "a step was logged twice or lost"; exit 1; }
[ "$(wc -l < "$dir/killed/steps.jsonl")" = "$total" ] || { echo "steps.jsonl lost or repeated lines"; exit 1; }
diff <(cut -d, -f1,2 "$dir/full/epoch_results.csv") <(cut -d, -f1,2 "$dir/killed/epoch_results.csv")
# The killed process's output and the resumed one's are both in run.log; each wrote its own
# TensorBoard event file (the second tells TensorBoard to drop the steps it redid).
[ "$(grep -c '^=== ' "$dir/killed/run.log")" = 2 ] || { echo "run.log lacks the killed or the resumed command"; exit 1; }
grep -q "resumed after step" "$dir/killed/run.log" || { echo "the resumed command's output is not in run.log"; exit 1; }
[ "$(ls "$dir/killed/tensorboard" | grep -c tfevents)" = 2 ] || { echo "want one event file per process"; exit 1; }
echo "resumed to the same weights after $total steps"
