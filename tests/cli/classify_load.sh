#!/usr/bin/env bash
# tach classify says what load its latency was taken under: beside busy processes on every core,
# with as many threads as cores, the text and the JSON say CONTENDED / "contended": true.
set -euo pipefail
tach=$1
cores=$(nproc)
pids=()
for _ in $(seq "$cores"); do timeout 30 sh -c 'while :; do :; done' & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 1
out=$("$tach" classify -m preset:bert-tiny -b 1 -s 16 --repeat 20 -t "$cores")
echo "$out" | grep -q '^load        other processes used ' || { echo "no load line:"; echo "$out"; exit 1; }
echo "$out" | grep -q 'CONTENDED: the latency above is the shared machine' || { echo "not marked contended:"; echo "$out"; exit 1; }
json=$("$tach" classify -m preset:bert-tiny -b 1 -s 16 --repeat 20 -t "$cores" --json)
echo "$json" | python3 -c 'import json,sys; l=json.load(sys.stdin)["load"]; assert l["measured"] and l["contended"] and l["other_cores_mean"] > 0.25, l'
echo "ok: classify beside $cores busy loop(s) is marked contended"
