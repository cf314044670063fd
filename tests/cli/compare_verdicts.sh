#!/bin/sh
# tach compare's verdicts from real run directories, where the truth is known by construction:
# - one -t 1,2 sweep compared --by threads: the throughput change is the ratio of the table's
#   samples/s (one definition: batch / median latency), whatever the machine did;
# - that run against copies of itself whose latencies drift (a ramp as a job starts beside it, a
#   stretch locked slow): identical builds and commands under changing load, never a change;
# - against a copy measured under contention: inconclusive; against a copy 1.6x slower with
#   the same load: regressed.
# usage: compare_verdicts.sh TACH WORK_DIR
set -eu
tach=$1
work=$2
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to write the drifting copies"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
"$tach" bench -m preset:bert-tiny -b 2 -s 8 -t 1,2 --runs 24 --warmup 1 --no-progress --no-tensorboard \
  --runs-dir "$work" --run-id sweep --format csv >"$work/bench.csv"

# --by threads: the change in throughput is the ratio of the two points' samples/s in the table.
"$tach" compare "$work/sweep" --by threads --format json --no-html >"$work/by_threads.json"
python3 - "$work" <<'EOF'
import csv, json, sys
work = sys.argv[1]
rows = {int(r["threads"]): float(r["samples_per_s"]) for r in csv.DictReader(open(work + "/sweep/detailed_metrics.csv"))}
change = json.load(open(work + "/by_threads.json"))["changes"][0]
want = rows[2] / rows[1] - 1
print(f"table: {rows[1]:.2f} -> {rows[2]:.2f} samples/s ({want:+.4f}); compare: {change['throughput_change']:+.4f}")
assert abs(change["throughput_change"] - want) < 1e-4 * max(1, abs(want)), "compare and the table disagree"
assert (change["throughput_change"] > 0) == (want > 0), "opposite signs"
EOF

# Copies of the run (its files, its medians) with latencies that drift by a known factor over
# time, and a load record.
python3 - "$work" <<'EOF'
import json, os, shutil, statistics, sys
work = sys.argv[1]
def copy(name, factor, load):
    dst = os.path.join(work, name)
    shutil.copytree(os.path.join(work, "sweep"), dst)
    lines = []
    for line in open(os.path.join(work, "sweep", "results.jsonl")):
        p = json.loads(line)
        # The run's own median with a steady 2% jitter, then the drift: what this machine did while
        # the sweep ran is no part of what is checked here.
        m = p["batch_latency_ms"]["median"]
        n = len(p["batch_latency_samples_ms"])
        s = [m * (1 + 0.01 * ((i * 7) % 5 - 2)) * factor(i / (n - 1)) for i in range(n)]
        p["batch_latency_samples_ms"] = s
        p["batch_latency_ms"]["median"] = statistics.median(s)
        p["load"] = load
        lines.append(json.dumps(p))
    open(os.path.join(dst, "results.jsonl"), "w").write("\n".join(lines) + "\n")
quiet = {"other_cores_mean": 0.1, "other_cores_max": 0.3, "load_average_1m": 0.3, "contended": False}
busy = {"other_cores_mean": 1.7, "other_cores_max": 2.0, "load_average_1m": 3.9, "contended": True}
copy("ramp", lambda t: 1.0 + 0.35 * t, quiet)              # a job starting beside it
copy("locked", lambda t: 1.0 if t < 0.45 else 1.5, quiet)  # a stretch locked slow
copy("same", lambda t: 1.0, quiet)
copy("loaded", lambda t: 1.6, busy)
copy("slower", lambda t: 1.6, quiet)
EOF
"$tach" compare "$work/ramp" "$work/locked" --format json --no-html >"$work/drift.json"
"$tach" compare "$work/same" "$work/ramp" --format json --no-html >"$work/drift2.json"
"$tach" compare "$work/same" "$work/loaded" "$work/slower" --format json --no-html >"$work/load.json"
python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
for name in ("drift", "drift2"):
    for c in json.load(open(f"{work}/{name}.json"))["changes"]:
        print(name, c["point"], f"{c['latency_change']:+.3f}", c["verdict"], "-", c["why"])
        assert c["verdict"] == "within noise", "a drift called a change"
for c in json.load(open(f"{work}/load.json"))["changes"]:
    print("load", c["point"], c["run"], c["verdict"], "-", c["why"])
    want = "inconclusive" if c["run"].endswith("loaded") else "regressed"
    assert c["verdict"] == want, f"expected {want}"
EOF
echo "PASS"
