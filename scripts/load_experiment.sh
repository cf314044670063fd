#!/bin/sh
# How tach's threading holds up on a shared machine: one small forward (bert-tiny, batch 1, 64
# tokens) timed under each threading variant with 0, 1 and 2 other processes spinning on a core
# each (bounded busy loops, at the same priority as tach). Variants alternate within each round,
# and rounds repeat, so that a load that drifts (other builds, other users) falls on every variant
# alike; the table is the median over rounds of each run's median latency.
#
#   scripts/load_experiment.sh [TACH] [ROUNDS]      (default: build/tach, 3 rounds)
#
# Prints: variant x busy loops -> median ms, and the machine it ran on (tach info's CPU line and
# the load average before it started). docs/perf.md keeps the figures.
set -eu
TACH=${1:-build/tach}
ROUNDS=${2:-3}
MODEL=${MODEL:-preset:bert-tiny}
ARGS="-m $MODEL -b 1 -s 64 --warmup 5 --repeat 40 --json"

# name|environment|extra options. "default" is tach as it ships (threads: the cores other processes
# leave free at start); "all-cores" is every core whatever the load (the former default), with
# libgomp's waits as they are, passive (sleep at once), or spinning briefly; "t1" one thread.
CORES=$(nproc)
VARIANTS="default||
all-cores||-t $CORES
all-passive|OMP_WAIT_POLICY=passive|-t $CORES
all-spin-10k|GOMP_SPINCOUNT=10000|-t $CORES
t1||-t 1"

[ -x "$TACH" ] || { echo "no tach binary at $TACH (build it, or pass its path)" >&2; exit 2; }
OUT=$(mktemp -d)
LOOPS=""
stop_loops() { for p in $LOOPS; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; LOOPS=""; }
trap 'stop_loops; rm -rf "$OUT"' EXIT INT TERM

median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "machine: $("$TACH" info | grep -m1 -i '^cpu' || true)"
echo "cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  for loops in 0 1 2; do
    i=0
    while [ "$i" -lt "$loops" ]; do
      timeout 120 sh -c 'while :; do :; done' &
      LOOPS="$LOOPS $!"
      i=$((i + 1))
    done
    [ "$loops" -gt 0 ] && sleep 5  # let the loops take their cores, as a user's jobs would have
    echo "$VARIANTS" | while IFS='|' read -r name envs extra; do
      # shellcheck disable=SC2086
      ms=$(env -u OMP_NUM_THREADS $envs "$TACH" classify $ARGS $extra 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["timing"]["median"]*1e3)' || echo nan)
      echo "$ms" >>"$OUT/$name.$loops"
    done
    stop_loops
  done
  echo "round $round of $ROUNDS done" >&2
done

printf '%-12s %14s %14s %14s\n' variant "no extra load" "1 busy loop" "2 busy loops"
echo "$VARIANTS" | while IFS='|' read -r name envs extra; do
  printf '%-12s' "$name"
  for loops in 0 1 2; do printf ' %11.3f ms' "$(median <"$OUT/$name.$loops")"; done
  printf '\n'
done
echo "(median over $ROUNDS rounds of each run's median of 40 forwards; $MODEL -b 1 -s 64)"
