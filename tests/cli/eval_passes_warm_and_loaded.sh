#!/usr/bin/env bash
# tach eval over two dtypes: each pass runs one untimed warm-up batch before its timed pass (so
# the pass that runs first does not pay the cold start), and records the load it ran under; beside
# a busy loop per core the text says CONTENDED and accuracy.json's load says so.
set -euo pipefail
tach=$1 fixtures=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
tok=$fixtures/tokenizers/tiny-wordpiece
data=$fixtures/bench/six_rows.csv
cores=$(nproc)
pids=()
for _ in $(seq "$cores"); do timeout 40 sh -c 'while :; do :; done' & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 1
out=$("$tach" eval -m preset:bert-tiny -k "$tok" -d "$data" --text-column sentence --dtype f32,int8 -t "$cores" \
  --runs-dir "$dir" --run-id ev)
echo "$out"
[ "$(echo "$out" | grep -c 'samples/s (after 1 untimed warm-up batch)')" = 2 ] || { echo "FAIL: each pass warmed up"; exit 1; }
echo "$out" | grep -q 'CONTENDED: other processes used' || { echo "FAIL: contended pass not said"; exit 1; }
python3 - "$dir/ev/accuracy.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
assert [x["warmup_batches"] for x in r] == [1, 1], r
assert all(x["load"]["contended"] and x["load"]["other_cores_max"] >= x["load"]["other_cores_mean"] for x in r), r
PY
echo "ok: both passes warmed up, load recorded"
