#!/bin/sh
# Every point records the threads it ran with beside the count asked for; a resumed run keeps the
# default count its earlier points used (and says so); summary.json's machine.threads, the tables
# and eval's method name the count that ran; tach compare meets points by the threads used.
# usage: threads_recorded.sh TACH WORK_DIR FIXTURES
set -eu
tach=$1
work=$2
fixtures=$3
command -v python3 >/dev/null || { echo "SKIP: python3 is needed to read the JSON"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
bench() { "$tach" bench -m preset:bert-tiny -s 8 --runs 3 --decode-tokens 0 --runs-dir "$work/runs" "$@"; }
# field FILE EXPR: a Python expression over j (the JSON of FILE) or lines (results.jsonl's objects).
field() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
path, expr = sys.argv[1], sys.argv[2]
text = open(path).read()
lines = [json.loads(l) for l in text.splitlines() if l.strip()] if path.endswith(".jsonl") else None
j = json.loads(text) if lines is None else None
print(eval(expr))
EOF
}

# A default sweep under OMP_NUM_THREADS=2, its second point lost (as to a Ctrl-C), resumed where the
# default is 1: the resumed point runs with 2 threads too, and the resume says so.
OMP_NUM_THREADS=2 bench -b 1,2 --run-id mix >"$work/mix.out" 2>&1 || { cat "$work/mix.out"; fail "bench mix"; }
head -n 1 "$work/runs/mix/results.jsonl" >"$work/first" && mv "$work/first" "$work/runs/mix/results.jsonl"
OMP_NUM_THREADS=1 "$tach" bench --resume "$work/runs/mix" >"$work/resume.out" 2>&1 || { cat "$work/resume.out"; fail "resume"; }
[ "$(field "$work/runs/mix/results.jsonl" '[l["threads"] for l in lines]')" = "[2, 2]" ] ||
  fail "points' threads: $(field "$work/runs/mix/results.jsonl" '[l["threads"] for l in lines]') (want [2, 2])"
[ "$(field "$work/runs/mix/results.jsonl" '[l["threads_requested"] for l in lines]')" = "[0, 0]" ] ||
  fail "threads_requested is not 0"
grep -F "default points ran with 2 threads" "$work/resume.out" >/dev/null || { cat "$work/resume.out"; fail "resume said nothing"; }
[ "$(field "$work/runs/mix/summary.json" 'j["machine"]["threads"]')" = 2 ] || fail "machine.threads of mix is not 2"
grep -E "2 \(default\)" "$work/resume.out" >/dev/null || { cat "$work/resume.out"; fail "the table does not say 2 (default)"; }
if grep -E "thr(eads)? all|all cores" "$work/resume.out" "$work/runs/mix/summary.txt"; then fail "'all' for 2 threads"; fi
echo "ok: resume keeps 2 threads"

# An explicit -t where the default is 1: machine.threads is the count that ran.
OMP_NUM_THREADS=1 bench -b 1 -t 2 --run-id t2 >"$work/t2.out" 2>&1 || { cat "$work/t2.out"; fail "bench -t 2"; }
[ "$(field "$work/runs/t2/summary.json" 'j["machine"]["threads"]')" = 2 ] || fail "machine.threads of -t 2 is not 2"
echo "ok: -t 2 recorded"

# tach eval: its method and machine.threads name the count that ran, default or asked for.
printf 'text,label\nfine,1\nbad,0\ngood,1\nawful,0\n' >"$work/tiny.csv"
eval_run() {
  "$tach" eval -m preset:bert-tiny -k "$fixtures/tokenizers/tiny-wordpiece" -d "$work/tiny.csv" \
    --runs-dir "$work/runs" "$@" >"$work/eval.out" 2>&1 || { cat "$work/eval.out"; fail "eval $*"; }
}
OMP_NUM_THREADS=1 eval_run --run-id e2 -t 2
[ "$(field "$work/runs/e2/summary.json" 'j["machine"]["threads"]')" = 2 ] || fail "eval -t 2: machine.threads is not 2"
field "$work/runs/e2/summary.json" 'j["method"]' | grep -F ", 2 threads;" >/dev/null || fail "eval -t 2: method"
OMP_NUM_THREADS=2 eval_run --run-id e0
[ "$(field "$work/runs/e0/summary.json" 'j["machine"]["threads"]')" = 2 ] || fail "eval default: machine.threads is not 2"
field "$work/runs/e0/summary.json" 'j["method"]' | grep -F "2 threads (the default)" >/dev/null ||
  fail "eval default: method $(field "$work/runs/e0/summary.json" 'j["method"]')"
echo "ok: eval records its threads"

# tach compare: a default run with 2 threads and one with 1 are compared across threads, not as one point.
OMP_NUM_THREADS=1 bench -b 1 --run-id o1 >/dev/null 2>&1 || fail "bench o1"
OMP_NUM_THREADS=2 bench -b 1 --run-id o2 >/dev/null 2>&1 || fail "bench o2"
"$tach" compare "$work/runs/o2" "$work/runs/o1" >"$work/compare.out" 2>&1 || true
grep -F "comparing threads" "$work/compare.out" >/dev/null || { cat "$work/compare.out"; fail "compare paired 2 and 1 threads"; }
grep -F "t2/b1" "$work/compare.out" >/dev/null && fail "compare kept the threads axis in the point id"
echo "ok: compare meets points by the threads used"

# What 0 means, in the error for a negative count.
if "$tach" bench -m preset:bert-tiny -t -1 --run-id neg --runs-dir "$work/runs" >"$work/neg.out" 2>&1; then fail "-t -1 ran"; fi
grep -F "cores other processes leave free" "$work/neg.out" >/dev/null || { cat "$work/neg.out"; fail "-t -1's message"; }
echo "ok"
