#!/bin/sh
# tach analyze on real torch.profiler traces (tests/fixtures/analyze): --json carries the field
# names other programs rely on (ops, ranks with gpu and overlap, steps) and equals torch's
# key_averages() for a row; a CPU trace says its GPU sections are skipped; a trace without
# distributedInfo is rank 0, said; what is not a trace, a cut gzip and a bad --sort-by are errors.
# usage: analyze_traces.sh TACH FIXTURES WORK_DIR
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$1
fixtures=$2/analyze
work=$3
rm -rf "$work"
mkdir -p "$work"

"$tach" analyze "$fixtures/train" --json -o "$work/train" > "$work/train.json"
test -s "$work/train/analysis.json" && test -s "$work/train/summary.txt"
python3 - "$work/train.json" "$fixtures/train/trainer.0.key_averages.json" "$fixtures/train/trainer.1.key_averages.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
refs = [json.load(open(p))["by_name"] for p in sys.argv[2:]]
for op in j["ops"]:
    for k in ("name", "calls", "self_cpu_us", "cpu_us", "self_device_us", "device_us", "flops"):
        assert k in op, "ops[] lacks %s" % k
    assert isinstance(op["flops"], int)
mm = next(o for o in j["ops"] if o["name"] == "aten::mm")
want = [next(r for r in ref if r["key"] == "aten::mm") for ref in refs]
assert mm["calls"] == sum(w["count"] for w in want), mm
assert mm["flops"] == sum(w["flops"] for w in want), mm
assert abs(mm["self_cpu_us"] - sum(w["self_cpu_time_total"] for w in want)) <= 0.01 * mm["self_cpu_us"], mm
(rank,) = j["ranks"]
assert rank["rank"] == 0 and rank["gpu"] is None and rank["comm_comp_overlap_pct"] is None
assert rank["kernel_types_us"] == {} and rank["top_kernels"] == []
assert [s["step"] for s in j["steps"]] == [2, 3, 6, 7], j["steps"]
for s in j["steps"]:
    assert s["backward_us"] > 0 and s["optimizer_us"] > 0 and s["forward_us"] > 0 and s["dataloader_us"] > 0, s
    assert s["wall_us"] >= s["forward_us"] + s["backward_us"] + s["optimizer_us"] + s["dataloader_us"] - 0.01, s
print("ok: --json fields; aten::mm equals torch's key_averages over both cycles; 4 steps split")
PY

out=$("$tach" analyze "$fixtures/infer/server.0.pt.trace.json.gz" -o "$work/infer" --group-by shape --sort-by calls)
echo "$out" | grep -q "no GPU events in these traces" || { echo "no word on the skipped GPU sections"; exit 1; }
echo "$out" | grep -q "no distributedInfo; rank 0 assumed" || { echo "the assumed rank is not said"; exit 1; }
echo "ok: a CPU trace skips the GPU sections, and the assumed rank is said"

printf '{"model": "bert"}' > "$work/config.json"
if "$tach" analyze "$work/config.json" -o "$work/bad" 2> "$work/err.txt"; then echo "a non-trace was accepted"; exit 1; fi
grep -q "not a trace" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
head -c 9000 "$fixtures/infer/server.0.pt.trace.json.gz" > "$work/cut.pt.trace.json.gz"
if "$tach" analyze "$work/cut.pt.trace.json.gz" -o "$work/bad" 2> "$work/err.txt"; then echo "a cut gzip was accepted"; exit 1; fi
grep -q "gzip stream is truncated" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }
set +e
"$tach" analyze "$fixtures/infer" --sort-by speed -o "$work/bad" 2> /dev/null
status=$?
set -e
[ "$status" -eq 2 ] || { echo "--sort-by speed: exit status $status, not 2"; exit 1; }
echo "ok: not a trace, a cut gzip and an unknown column are errors"
