#!/bin/sh
# What a new user found in tach analyze and tach compare, checked through the binary:
# - analyze -o at a directory that holds anything (a bench run, an earlier analysis) is refused
#   before any trace is read, and the files there are left as they were;
# - compare's option values out of range are usage errors (exit 2): --fail-on-regression -5, nan
#   or inf (which once switched the check off), --confidence, --resamples, --noise-threshold,
#   --format, --by, and one run without --by; analyze --top -1 likewise.
# usage: review_fixes.sh TACH FIXTURES WORK_DIR
set -u
tach=$1
fixtures=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

# expect STATUS TEXT COMMAND...: COMMAND exits STATUS and its stderr holds TEXT.
expect() {
  want=$1 text=$2
  shift 2
  "$@" >"$work/out" 2>"$work/err"
  got=$?
  [ "$got" = "$want" ] || { cat "$work/err"; fail "exit $got, not $want: $*"; }
  grep -qF -- "$text" "$work/err" || { cat "$work/err"; fail "no '$text' from: $*"; }
}

"$tach" bench -m preset:bert-tiny -b 1 -s 8 -t 1 --runs 3 --warmup 0 --no-progress --no-tensorboard \
  --runs-dir "$work" --run-id sweep >/dev/null 2>&1 || fail "the bench run failed"
sweep=$work/sweep
ls "$sweep" >"$work/before"
cksum "$sweep"/* >"$work/sums_before"

# A bench run's directory as -o: refused, nothing in it changed or added.
expect 1 "$sweep already holds a run (" "$tach" analyze "$fixtures/analyze/train" -o "$sweep"
ls "$sweep" | cmp -s - "$work/before" || fail "analyze added files to the bench run"
cksum "$sweep"/* | cmp -s - "$work/sums_before" || fail "analyze changed the bench run's files"

# An earlier analysis as -o: refused, and before any trace is read (a missing trace is not what it says).
"$tach" analyze "$fixtures/analyze/train" -o "$work/first" >/dev/null 2>&1 || fail "the first analysis failed"
cksum "$work/first/summary.txt" >"$work/first_sum"
expect 1 "$work/first already holds a run (" "$tach" analyze "$fixtures/analyze/infer" -o "$work/first"
expect 1 "$work/first already holds a run (" "$tach" analyze "$work/no-such-trace.json" -o "$work/first"
cksum "$work/first/summary.txt" | cmp -s - "$work/first_sum" || fail "analyze overwrote an earlier analysis"
# An empty directory is taken.
mkdir "$work/empty"
"$tach" analyze "$fixtures/analyze/train" -o "$work/empty" >/dev/null 2>&1 || fail "an empty -o was refused"
[ -f "$work/empty/analysis.json" ] || fail "no analysis.json in the empty -o"

# Without -o, analyses run in the same second each get a directory of their own.
mkdir "$work/cwd"
(cd "$work/cwd" && "$tach" analyze "$fixtures/analyze/train" && "$tach" analyze "$fixtures/analyze/train") \
  >/dev/null 2>&1 || fail "a second analysis without -o was refused"
[ "$(ls "$work/cwd/runs" | wc -l)" = 2 ] || fail "two analyses without -o did not write two directories"

expect 2 "--top -1: --top values must be positive integers" "$tach" analyze "$fixtures/analyze/train" --top -1 -o "$work/t1"
expect 2 "--top 0: --top values must be positive integers" "$tach" analyze "$fixtures/analyze/train" --top 0 -o "$work/t0"

# compare: usage errors, exit 2, with the messages they had.
cmp_args="$sweep $sweep --no-html"
for v in -5 nan inf; do
  expect 2 "--fail-on-regression takes a percentage of 0 or more" "$tach" compare $cmp_args --fail-on-regression "$v"
done
expect 2 "--confidence must be in (0, 1)" "$tach" compare $cmp_args --confidence 1.5
expect 2 "--confidence must be in (0, 1)" "$tach" compare $cmp_args --confidence 0
expect 2 "--resamples must be at least 100" "$tach" compare $cmp_args --resamples 0
expect 2 "--resamples must be at least 100" "$tach" compare $cmp_args --resamples -3
expect 2 "--noise-threshold is a percentage in [0, 100)" "$tach" compare $cmp_args --noise-threshold -1
expect 2 "--format 'xml': expected table, md, csv or json" "$tach" compare $cmp_args --format xml
expect 2 "no point axis 'bogus'" "$tach" compare "$sweep" --by bogus --no-html
expect 2 "tach compare needs two runs or more" "$tach" compare "$sweep" --no-html
# A limit of 0 is a limit: the run against itself regressed by no more than 0%, so exit 0.
"$tach" compare $cmp_args --fail-on-regression 0 >/dev/null 2>&1 || fail "--fail-on-regression 0 on one run against itself"
echo "ok"
