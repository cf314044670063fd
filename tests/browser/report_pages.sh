#!/usr/bin/env bash
# The reports of a profiled bench run, an eval run and a profile directory, and compare.html,
# opened in headless Chromium by check_report.py (console errors, charts drawn with their series,
# the run's numbers in the tables); screenshots land beside each page in OUT.
# Usage: report_pages.sh TACH FIXTURES SHARED OUT. Exit 77 (skip) when no browser can be had.
set -u
tach=$1 fixtures=$2 shared=$3 out=$4
check="$(dirname "$0")/check_report.py"
# Debian's python3, where python3-selenium is installed (another python3 may come first on PATH).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3) || { echo "SKIP: no python3 to drive the browser (scripts/setup.sh installs it)"; exit 77; }
rm -rf "$out" && mkdir -p "$out"
# One thread in both runs compared below: by default each run takes the cores other processes leave
# free, so two runs on a machine whose load changes can pick different counts and share no point.
"$tach" run -m preset:bert-tiny -b 1,2,4 -s 8,16 -t 1 --runs 5 --no-progress --runs-dir "$out" --run-id bench > /dev/null || exit 1
"$py" "$check" "$out/bench/report.html" --expect line-chart=2,2,0,2,2,2 --expect heatmap=6 \
  --expect distribution-chart=3,3 --expect roofline=3,3,3,3,3,3 --contains BertForSequenceClassification \
  --contains "cpu/f32/t1/b4/s16"
rc=$?; [ $rc -ne 0 ] && exit $rc
"$tach" bench -m preset:bert-tiny -b 1,2,4 -s 8,16 -t 1 --runs 5 --no-progress --runs-dir "$out" --run-id again > /dev/null || exit 1
"$tach" compare "$out/bench" "$out/again" --html "$out/compare.html" > /dev/null || exit 1
"$py" "$check" "$out/compare.html" --expect change-chart=6 --expect distribution-chart=2,2,2,2,2,2 --contains "comparisons" || exit 1
"$tach" bench --train -m preset:bert-tiny -b 2,8 -s 16 --exec eager,fused --no-progress --runs-dir "$out" \
  --run-id train --report > /dev/null 2>&1 || exit 1
# Throughput, MFU, memory and step time against batch (one series per exec), then per series the
# stacked phases and memory categories (four parts shown of each; five memory categories).
"$py" "$check" "$out/train/report.html" --expect line-chart=2,2,2,2 --expect stacked-columns=4,5,4,5 \
  --contains "Training sweep" --contains "Throughput peaks at batch" --contains "cpu/f32/t0/b8/s16/full/fused" || exit 1
"$tach" compare "$out/train" --by exec --html "$out/train-compare.html" > /dev/null || exit 1
"$py" "$check" "$out/train-compare.html" --expect change-chart=2 --contains "exec eager" || exit 1
# The op chart: linear, attention, layer_norm, embedding and copy_rows (the last layer's first tokens).
"$tach" profile -m preset:bert-tiny -b 2 -s 8 --profiler-output-dir "$out/profile" > /dev/null || exit 1
"$tach" report "$out/profile" > /dev/null || exit 1
"$py" "$check" "$out/profile/report.html" --expect roofline=3 --expect bar-chart=5,10 --contains "Top bottlenecks" || exit 1
if [ -f "$shared/data/sst2/dev.tsv" ]; then
  "$tach" eval -m "$fixtures/encoders/distilbert-sst2-tiny" -k "$shared/tokenizers/bert-base-uncased" \
    -d "$shared/data/sst2/dev.tsv" --sample-sizes 200 --runs-dir "$out" --run-id eval > /dev/null || exit 1
  "$tach" report "$out/eval" > /dev/null || exit 1
  "$py" "$check" "$out/eval/report.html" --expect heatmap=2 --contains "macro-F1" --contains "true negative" || exit 1
else
  echo "the eval page is left out: $shared/data/sst2/dev.tsv is absent"
fi
# --pdf prints through the same headless Chromium.
"$tach" report --pdf "$out/profile" > /dev/null || exit 1
head -c 5 "$out/profile/report.pdf" | grep -q "%PDF-" || { echo "FAIL: report.pdf is not a PDF"; exit 1; }
echo "report.pdf: $(stat -c %s "$out/profile/report.pdf") bytes"
# Without a browser, --pdf says how to get one (and report.html is still written).
msg=$(PATH=/nonexistent "$tach" report --pdf "$out/profile" 2>&1)
echo "$msg" | grep -q "apt-get install chromium" || { echo "FAIL: --pdf without chromium said: $msg"; exit 1; }
