#!/bin/sh
# An engine refused before it runs leaves nothing behind: tach profile --engine onnxruntime (a
# usage error, exit 2) and an engine whose Python packages are missing (the stand-in worker says
# so; exit 1), for tach profile and tach bench, with the default directory and one given: after
# each refusal the working directory is as empty as before, and no directory given was made.
# usage: engine_refused_leaves_nothing.sh TACH FIXTURES WORK_DIR
set -u
tach=$1
fixtures=$2
work=$3
model="$fixtures/encoders/bert-cls2-f32"
standin="$fixtures/engines/python"
rm -rf "$work"
mkdir -p "$work/cwd"
cd "$work/cwd" || exit 1
failed=0

# refused NAME STATUS PATTERN ARGS...: tach ARGS exits STATUS, says PATTERN, and leaves cwd empty.
refused() {
  name=$1 status=$2 pattern=$3
  shift 3
  "$tach" "$@" > "$work/$name.txt" 2>&1
  rc=$?
  left=$(ls -A)
  if [ "$rc" != "$status" ] || ! grep -q "$pattern" "$work/$name.txt" || [ -n "$left" ] || [ -e "$work/given" ]; then
    echo "FAIL $name: exit $rc (want $status), left [$left]$([ -e "$work/given" ] && echo ' and made the given directory'):"
    cat "$work/$name.txt"
    failed=1
    rm -rf ./* "$work/given"
  else
    echo "ok $name: exit $rc, nothing left"
  fi
}

refused profile_onnxruntime 2 "cannot be profiled here" profile -m "$model" --engine onnxruntime -b 1 -s 8
export TACH_TEST_WORKER_MODE=unavailable
refused profile_missing 1 "engine torch needs the Python packages" \
  profile -m "$model" --engine torch --python "$standin" -b 1 -s 8
refused profile_missing_given_dir 1 "engine torch needs the Python packages" \
  profile -m "$model" --engine torch --python "$standin" -b 1 -s 8 --profiler-output-dir "$work/given"
refused bench_missing 1 "engine torch needs the Python packages" \
  bench -m "$model" --engine tach,torch --python "$standin" -b 1 -s 8 --no-progress
refused bench_missing_given_dir 1 "engine torch needs the Python packages" \
  bench -m "$model" --engine tach,torch --python "$standin" -b 1 -s 8 --no-progress --runs-dir "$work/given"
exit $failed
