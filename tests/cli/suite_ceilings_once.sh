#!/bin/sh
# The suite's ceilings are measured once, before the tests that need them, and read by them: in a
# fresh cache directory, suite_ceilings.sh measures (alone, as its RUN_SERIAL fixture runs), then
# two processes at once, as `ctest -j2` starts them, read the cache instead of measuring beside
# each other (which a ceiling measured under load never is cached from, so each would measure
# three times). CTest runs that fixture before every other CLI test of the suite.
# usage: suite_ceilings_once.sh TACH WORK_DIR BUILD_DIR
set -u
tach=$1
here=$(cd "$(dirname "$0")" && pwd)
export XDG_CACHE_HOME="$2"
rm -rf "$XDG_CACHE_HOME"
fail() { echo "FAIL: $*"; exit 1; }

# The wiring: the fixture runs alone and first, and the CLI tests require it.
if command -v python3 > /dev/null; then
  (cd "$3" && ctest --show-only=json-v1) | python3 -c '
import json, sys
tests = {t["name"]: {p["name"]: p["value"] for p in t.get("properties", [])} for t in json.load(sys.stdin)["tests"]}
setup = tests.get("suite.ceilings")
if setup is None: sys.exit("no suite.ceilings test")
if setup.get("FIXTURES_SETUP") != ["suite_ceilings"] or not setup.get("RUN_SERIAL"):
    sys.exit("suite.ceilings is not the RUN_SERIAL setup of the suite_ceilings fixture: %s" % setup)
for name in ("cli.profile", "cli.info_ceilings", "cli.train_tasks"):
    if name in tests and "suite_ceilings" not in tests[name].get("FIXTURES_REQUIRED", []):
        sys.exit("%s does not require the suite_ceilings fixture" % name)
' || fail "the fixture is not wired"
fi

out=$(sh "$here/suite_ceilings.sh" "$tach") || fail "suite_ceilings.sh: $out"
echo "$out"
case $out in *busy*)
  echo "skipped: the machine is busy, so the ceilings were measured under load and not cached"
  exit 77 ;;
esac
OMP_NUM_THREADS=1 "$tach" info --ceilings > "$XDG_CACHE_HOME/one.txt" 2>&1 &
OMP_NUM_THREADS=2 "$tach" info --ceilings > "$XDG_CACHE_HOME/two.txt" 2>&1 &
wait
for f in one two; do
  grep -q 'old (other processes used .*cached in .*--remeasure to measure again' "$XDG_CACHE_HOME/$f.txt" ||
    fail "threads $f: measured again instead of read from the cache: $(cat "$XDG_CACHE_HOME/$f.txt")"
done
echo "both read the ceilings the fixture measured"
