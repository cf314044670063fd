#!/usr/bin/env bash
# A sweep killed with SIGKILL midway resumes to the same final set of points as an uninterrupted
# run, each point exactly once. Usage: kill_resume.sh path/to/tach [train] (train: a training
# sweep, tach bench --train)
set -euo pipefail
tach=$1
dir=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
args=(bench -m preset:bert-tiny -b 1,2,4,8 -s 16,32 --runs 150 --warmup 1 --runs-dir "$dir" --no-progress)
[ "${2:-}" = train ] && args=(bench --train -m preset:bert-tiny -b 1,2,4,8 -s 16,32 --runs 30 --warmup 1 \
  --runs-dir "$dir" --no-progress)

"$tach" "${args[@]}" --run-id full >/dev/null 2>&1
"$tach" "${args[@]}" --run-id killed >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  n=0
  [ -f "$dir/killed/results.jsonl" ] && n=$(wc -l < "$dir/killed/results.jsonl")
  [ "$n" -ge 2 ] && break
  sleep 0.01
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=""
before=$(wc -l < "$dir/killed/results.jsonl")
if [ "$before" -ge 8 ]; then echo "the sweep finished before the kill: nothing was tested"; exit 1; fi
echo "killed after $before of 8 points"

"$tach" bench --resume "$dir/killed" --no-progress >/dev/null 2>&1
ids() { grep -o '"id":"[^"]*"' "$1" | sort; }
if [ -n "$(ids "$dir/killed/results.jsonl" | uniq -d)" ]; then echo "a point was written twice"; exit 1; fi
diff <(ids "$dir/full/results.jsonl") <(ids "$dir/killed/results.jsonl")
for f in summary.json summary.txt detailed_metrics.csv; do test -s "$dir/killed/$f"; done
[ "${2:-}" = train ] && test -s "$dir/killed/performance_report.md"
[ "${2:-}" = train ] && grep -q '"kind":"train"' "$dir/killed/results.jsonl"
echo "resumed to the same $(ids "$dir/full/results.jsonl" | wc -l) points"
