#!/bin/sh
# A fuzzing campaign: each named target (default: all) from its committed corpus, with ASan and
# UBSan (make fuzz builds them so), until RUNS runs or SECONDS seconds, whichever comes first.
# New inputs go to a work corpus under OUT, never into tests/fuzz/corpus; a crash leaves its input
# there too (OUT/<target>-crash-*), and the campaign goes on with the next target.
# Prints one line per target, for docs/perf.md: runs, seconds, runs/s, the outcome, the load.
#
#   tests/fuzz/campaign.sh [-r RUNS] [-s SECONDS] [-o OUT] [-b BUILD] [target ...]
#   e.g. nice -n 19 tests/fuzz/campaign.sh -s 1800 parquet tokenizer_json
set -u
runs=1000000
seconds=1800
out=/tmp/tach-fuzz
build=build-fuzz
while getopts r:s:o:b: opt; do
  case $opt in
    r) runs=$OPTARG ;;
    s) seconds=$OPTARG ;;
    o) out=$OPTARG ;;
    b) build=$OPTARG ;;
    *) echo "usage: $0 [-r RUNS] [-s SECONDS] [-o OUT] [-b BUILD] [target ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
here=$(cd "$(dirname "$0")" && pwd)
# Each target and the corpus folder it starts from.
all="safetensors:safetensors config:config tokenizer_json:tokenizer_json tokenizer_encode:tokenizer_text
precompiled:precompiled dataset:dataset bench_config:bench_config sentence_config:sentence_config parquet:parquet
slurm_plan:slurm_plan conll:conll trace:trace squad:squad engine_reply:engine_reply"
[ $# -gt 0 ] || set -- $(for pair in $all; do echo "${pair%%:*}"; done)
mkdir -p "$out"
status=0
for target in "$@"; do
  corpus=
  for pair in $all; do [ "${pair%%:*}" = "$target" ] && corpus=${pair#*:}; done
  [ -n "$corpus" ] || { echo "$target: not a fuzz target (one of: $(echo "$all" | sed 's/:[a-z_]*//g' | tr '\n' ' '))" >&2; exit 2; }
  binary=$build/tests/fuzz/fuzz_$target
  [ -x "$binary" ] || { echo "$binary: not built (make fuzz)" >&2; exit 2; }
  work=$out/$target
  mkdir -p "$work"
  log=$out/$target.log
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  started=$(date +%s)
  # /usr/bin/time for the CPU seconds the campaign got (a niced one on a busy machine gets few).
  timer=
  [ -x /usr/bin/time ] && timer="/usr/bin/time -f %U+%S -o $out/$target.cpu"
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 $timer "$binary" -runs="$runs" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/$target-" \
    "$work" "$here/corpus/$corpus" >"$log" 2>&1
  rc=$?
  elapsed=$(($(date +%s) - started))
  load_after=$(cut -d' ' -f1 /proc/loadavg)
  done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$done_runs" ] || done_runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  [ -n "$done_runs" ] || done_runs=0
  if [ $rc -eq 0 ]; then outcome="no finding"; else
    outcome="FINDING (exit $rc): $(grep -m1 -E 'ERROR:|runtime error:|SUMMARY:' "$log" | cut -c1-160); input $(ls "$out/$target"-* 2>/dev/null | head -1)"
    status=1
  fi
  rate=$(awk -v r="$done_runs" -v s="$elapsed" 'BEGIN { printf "%.0f", (s > 0 ? r / s : 0) }')
  cpu=$( [ -f "$out/$target.cpu" ] && tail -1 "$out/$target.cpu" | awk -F+ '{ printf "%.0f", $1 + $2 }')
  echo "fuzz_$target: $done_runs runs in $elapsed s ($rate runs/s; ${cpu:-?} CPU s), $outcome;" \
    "load average $load_before -> $load_after"
done
exit $status
