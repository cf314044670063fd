#!/bin/sh
# The machine's ceilings for the suite, measured once, alone, before the tests that judge ops
# against them (tach train's summary, tach profile, bench --train and --profile, decoding limits).
# Without it, under `ctest -j` every such test process finds no cache, measures beside the other
# tests, sees them as load, does not cache (a ceiling measured under load never is) and tries
# three times: about 7 s each, for every one of them. CTest runs this first and alone (RUN_SERIAL,
# the suite_ceilings fixture), so that on an otherwise quiet machine the figures are cached and
# every later process reads them. Where the cache already holds quiet figures it reads them
# (milliseconds). On a machine busy with other work nothing can be cached: it says so and the
# tests measure for themselves, as tach does for any user.
# One figure per thread count the tests run with: 1, 2 (the default on a 2-core machine, less any
# core other processes keep busy) and every core.
# usage: suite_ceilings.sh TACH   (the cache is $XDG_CACHE_HOME/tach, else ~/.cache/tach)
set -u
tach=$1
for threads in $(printf '%s\n' 1 2 "$(nproc)" | sort -un); do
  out=$(OMP_NUM_THREADS=$threads "$tach" info --ceilings 2>&1) || { echo "$out"; exit 1; }
  case $out in
    *"measured under load"* | *"could not be read"*)
      echo "threads $threads: the machine is busy, nothing cached; each test that needs the ceilings measures them" ;;
    *"cached in "*) echo "threads $threads: $(echo "$out" | grep -o 'measured [0-9TZ:-]*.*cached in [^ ]*' | head -1)" ;;
    *) echo "$out"; exit 1 ;;
  esac
done
