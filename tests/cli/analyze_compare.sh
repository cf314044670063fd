#!/bin/sh
# tach analyze A B on real torch.profiler traces (tests/fixtures/analyze/compare): two directories
# are two runs compared (--json carries the comparison object; a model four times wider is
# "slower"); --compare on two cycles of one run finds no change (within noise, or inconclusive where
# their steps overlap); --compare wants two paths; and
# tach report on the comparison writes report.html with its figures as PNG files and slides.
# usage: analyze_compare.sh TACH FIXTURES WORK_DIR
set -eu
command -v python3 > /dev/null || { echo "skip: python3 (to read the JSON) is not installed"; exit 77; }
tach=$1
fixtures=$2/analyze/compare
work=$3
rm -rf "$work"
mkdir -p "$work"

"$tach" analyze "$fixtures/base" "$fixtures/wide" --json -o "$work/wide" > "$work/wide.json"
python3 - "$work/wide.json" "$work/wide/analysis.json" <<'PY'
import json, sys
printed, written = (json.load(open(p)) for p in sys.argv[1:])
assert printed == written, "--json prints analysis.json"
c = printed["comparison"]
for k in ("baseline", "new", "per", "op_time", "step_time", "ops", "kernels"):
    assert k in c, "comparison lacks %s" % k
st = c["step_time"]
assert st["verdict"] == "slower", st
assert st["ci"][0] > 0 and st["median_ms"] > st["baseline_median_ms"], st
for o in c["ops"]:
    for k in ("name", "baseline", "new", "delta"):
        assert k in o, o
    for k in ("time_us", "time_change", "calls", "share_points"):
        assert k in o["delta"], o
assert printed["baseline"]["schema"] == "tach.analysis/1" and len(printed["steps"]) == 24
print("ok: two directories compared; the wider model's steps are slower:", st["why"])
PY
grep -q "Step time: median" "$work/wide/summary.txt" || { echo "summary.txt lacks the comparison"; exit 1; }
grep -q "The baseline:" "$work/wide/summary.txt" || { echo "summary.txt lacks the runs' own reports"; exit 1; }

out=$("$tach" analyze --compare "$fixtures/base/base.0.pt.trace.json.gz" "$fixtures/base/base.1.pt.trace.json.gz" \
  -o "$work/same")
echo "$out" | grep -Eq "^Step time: .*: (within noise|inconclusive)$" || {
  echo "$out"; echo "two cycles of one run judged a change"; exit 1; }
echo "ok: two cycles of one run are not faster or slower:"
echo "$out" | sed -n '3,4p'


set +e
"$tach" analyze --compare "$fixtures/base" -o "$work/bad" 2> "$work/err.txt"
status=$?
set -e
[ "$status" -eq 2 ] || { echo "--compare with one path: exit status $status, not 2"; exit 1; }
grep -q "two paths" "$work/err.txt" || { cat "$work/err.txt"; exit 1; }

"$tach" report "$work/wide" --png --pptx --png-scale 1 > "$work/report.txt"
test -s "$work/wide/report.html" && test -s "$work/wide/report.pptx"
for f in step_time_change op_time_deltas time_breakdown step_phases; do
  test -s "$work/wide/plots/$f.png" || { cat "$work/report.txt"; echo "no plots/$f.png"; exit 1; }
done
python3 - "$work/wide/analysis.json" "$work/wide/report.html" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
html = open(sys.argv[2]).read()
st = a["comparison"]["step_time"]
for figure in ("%.3f" % st["median_ms"], "%.3f" % st["baseline_median_ms"], "step time slower"):
    assert figure in html, figure
top = a["comparison"]["ops"][0]
assert top["name"] in html.replace("&lt;", "<").replace("&gt;", ">"), top["name"]
print("ok: report.html holds the comparison's figures; PNG files and slides written")
PY
