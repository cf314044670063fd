#!/usr/bin/env bash
# tach compare on one build and one command, measured under two loads that this script makes:
# - the same short bench with the default threads, once beside a busy loop on every core and once
#   without: the loaded run's points are contended, so every verdict is inconclusive;
# - the same with -t 1, once beside one busy loop (the free core taken, tach's own core left
#   alone: not contended) and once without.
# Whatever else loads the machine, no verdict may be improved or regressed (the build and command
# are the same), --fail-on-regression never trips, and wherever the two points' recorded loads
# differ (a side contended, the means or the busiest stretches more than 0.25 cores apart, or
# one side's load moving that much while it ran) the verdict says "measured under different load"
# or under contention. The loops are bounded (timeout) and killed by their ids on exit.
# usage: compare_under_load.sh TACH WORK_DIR
set -euo pipefail
tach=$1
work=$2
[ -r /proc/stat ] || { echo "SKIP: no /proc/stat, so no load is recorded"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the comparison"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
cores=$(nproc)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
busy_loops() {  # N: start N bounded busy loops
  for _ in $(seq "$1"); do timeout 60 sh -c 'while :; do :; done' & pids+=($!); done
  sleep 1
}
stop_loops() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  sleep 1
}
bench() {  # RUN_ID [ARGS...]
  local id=$1
  shift
  "$tach" bench -m preset:bert-tiny -b 1,2 -s 8 --runs 6 --warmup 1 --no-progress --no-tensorboard \
    --runs-dir "$work" --run-id "$id" "$@" >"$work/$id.out"
}

bench quiet
busy_loops "$cores"
bench loaded
stop_loops
bench quiet_t1 -t 1
if [ "$cores" -ge 2 ]; then
  busy_loops 1
  bench beside_t1 -t 1
  stop_loops
fi

check() {  # BASELINE RUN: compare them; no change called, a load difference named
  local rc=0
  "$tach" compare "$work/$1" "$work/$2" --fail-on-regression 5 --format json --no-html >"$work/$2.json" || rc=$?
  [ "$rc" -eq 0 ] || { echo "tach compare $1 $2 --fail-on-regression 5 exited $rc"; cat "$work/$2.json"; exit 1; }
  python3 - "$work/$2.json" "$work/$1/results.jsonl" "$work/$2/results.jsonl" "$3" <<'EOF'
import json, re, sys
comparison, base_lines, run_lines, must_contend = sys.argv[1:]
loads = []  # per run: (batch, seq_len) -> the point's load record (None: not measured)
for path in (base_lines, run_lines):
    points = [json.loads(l) for l in open(path) if l.strip()]
    loads.append({(p["batch_size"], p["seq_len"]): p.get("load") for p in points})
changes = json.load(open(comparison))["changes"]
assert changes, "nothing compared"
for c in changes:
    point = c["point"]
    key = tuple(int(v) for v in re.search(r"/b(\d+)/s(\d+)", point).groups())
    a, b = loads[0][key], loads[1][key]
    print(f"{point}: {c['latency_change']:+.3f} {c['verdict']} - {c['why']}")
    if a is None or b is None:
        print("SKIP: this machine's /proc/stat does not record the load (a container's own view)")
        sys.exit(77)
    assert c["verdict"] not in ("improved", "regressed"), "one build and one command called a change"
    differ = (a["contended"] or b["contended"]
              or abs(a["other_cores_mean"] - b["other_cores_mean"]) > 0.25
              or abs(a["other_cores_max"] - b["other_cores_max"]) > 0.25
              or max(l["other_cores_max"] - l["other_cores_mean"] for l in (a, b)) > 0.25)
    if differ:
        assert c["verdict"] == "inconclusive", "measured under different load, but judged"
        assert "under different load" in c["why"] or "under contention" in c["why"], c["why"]
    if must_contend == "yes":
        assert b["contended"], f"beside a busy loop on every core, the point was not contended: {b}"
EOF
}
check quiet loaded yes
if [ "$cores" -ge 2 ]; then check quiet_t1 beside_t1 no; fi
echo "PASS: no change called between runs of one build under different load"
