#!/usr/bin/env bash
# The report of a 100-point sweep with raw samples: its size and how long headless Chromium takes
# to load it (navigation timing), best of 3 loads. A benchmark, not a test: docs/perf.md has the
# figures. Usage: scripts/report_bench.sh [build/tach] [OUT_DIR]
set -euo pipefail
tach=${1:-build/tach}
out=${2:-/tmp/tach-report-bench}
rm -rf "$out"
"$tach" bench -m preset:bert-tiny -b 1,2,3,4,5,6,7,8,9,10 -s 8,16,24,32,40,48,56,64,72,80 --runs 30 \
  --no-progress --runs-dir "$out" --run-id sweep100 > /dev/null
"$tach" report "$out/sweep100"
points=$(wc -l < "$out/sweep100/results.jsonl")
echo "points: $points, raw samples per point: 30"
for i in 1 2 3; do
  /usr/bin/python3 "$(dirname "$0")/../tests/browser/check_report.py" "$out/sweep100/report.html" --max-mb 2 \
    --expect "line-chart=10,10,0,10,10,10" --expect heatmap=100
done
