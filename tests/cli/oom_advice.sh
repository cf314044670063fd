#!/bin/sh
# A training point that runs out of memory (forced with TACH_MEMORY_LIMIT_MB, which caps the bytes
# in use on a device) fails with the allocator's facts and advice: what tach estimate says the
# point needs, the largest batch that fits the device's free memory (tach estimate agrees), and
# switches that need less, each one tach bench accepts.
# tach train, the same, in its own options' spellings.
# usage: oom_advice.sh TACH WORK_DIR TRAIN_CSV
set -eu
tach=$1
dir=$2
csv=$3
rm -rf "$dir"
mkdir -p "$dir"
status=0
TACH_MEMORY_LIMIT_MB=40 "$tach" bench --train -m preset:bert-tiny -b 64 -s 128 --runs 1 --warmup 0 \
  --no-progress --no-tensorboard --runs-dir "$dir/runs" >"$dir/out.txt" 2>&1 || status=$?
[ "$status" -ne 0 ] || { echo "FAIL: the capped point did not fail"; cat "$dir/out.txt"; exit 1; }
msg=$(grep -m1 'out of memory on cpu' "$dir/out.txt") || { echo "FAIL: no out-of-memory error"; cat "$dir/out.txt"; exit 1; }
echo "$msg"
for fact in 'could not allocate [0-9]* bytes for' 'TACH_MEMORY_LIMIT_MB=40' 'tach estimate says the step needs [0-9]* MiB' \
    'the largest batch that fits is [0-9]*' 'these need less:.*--gradient-checkpointing on (needs [0-9]* MiB)' \
    '--method lora (needs [0-9]* MiB)'; do
  echo "$msg" | grep -q -e "$fact" || { echo "FAIL: the message lacks: $fact"; exit 1; }
done
# Every switch named is one of tach bench's options.
"$tach" bench --help >"$dir/help.txt"
for flag in $(echo "$msg" | sed 's/.*these need less://' | grep -o -e '--[a-z-]*' -e ' -[a-z] ' | sort -u); do
  grep -q -e "$flag" "$dir/help.txt" || { echo "FAIL: $flag is not an option of tach bench"; exit 1; }
done
# The batch named fits per tach estimate (free memory moves: within 10% of its own largest).
batch=$(echo "$msg" | sed -n 's/.*the largest batch that fits is \([0-9]*\).*/\1/p')
[ "$batch" -gt 64 ] || { echo "FAIL: largest batch $batch"; exit 1; }
est=$("$tach" estimate -m preset:bert-tiny -b "$batch" -s 128 --mode train-full) || true  # exits 1 where it does not fit
echo "$est" | grep verdict
largest=$(echo "$est" | sed -n 's/.*the largest batch that fits at 128 tokens: \([0-9]*\).*/\1/p')
echo "$est" | grep -q 'verdict *fits' || [ "$((largest * 10))" -ge "$((batch * 9))" ] ||
  { echo "FAIL: tach estimate says batch $batch does not fit (largest $largest)"; exit 1; }

status=0
TACH_MEMORY_LIMIT_MB=40 "$tach" train -m preset:bert-tiny -d "$csv" --batch-size 64 --max-length 128 --epochs 1 \
  --no-tensorboard --runs-dir "$dir/train" >"$dir/train.txt" 2>&1 || status=$?
[ "$status" -ne 0 ] || { echo "FAIL: tach train under the cap did not fail"; cat "$dir/train.txt"; exit 1; }
msg=$(grep -m1 'out of memory on cpu' "$dir/train.txt") || { echo "FAIL: tach train: no out-of-memory error"; exit 1; }
echo "$msg"
for fact in 'TACH_MEMORY_LIMIT_MB=40' 'tach estimate says the step needs [0-9]* MiB' \
    'the largest batch that fits is [0-9]* (--batch-size [0-9]*)' 'these need less:.*--gradient-checkpointing (needs' \
    '--max-length 64 (needs'; do
  echo "$msg" | grep -q -e "$fact" || { echo "FAIL: tach train's message lacks: $fact"; exit 1; }
done
"$tach" train --help >"$dir/train_help.txt"
for flag in $(echo "$msg" | grep -o -e '--[a-z-]*' | sort -u); do
  grep -q -e "$flag" "$dir/train_help.txt" || { echo "FAIL: $flag is not an option of tach train"; exit 1; }
done
echo "PASS"
