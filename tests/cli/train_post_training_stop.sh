#!/usr/bin/env bash
# tach train's work after the last step (summary.json, saving the model, judging the profiled
# ops) says what it does, and a Ctrl-C there keeps what was measured: exit 130 with a message,
# summary.json with the steps' medians; --resume does what was left, and a finished run resumed
# says so and changes nothing, byte for byte. The Ctrl-C is sent at a known piece of that work:
# TACH_TEST_HOLD_AT makes the run wait there (after printing its line) until the signal arrives.
# Usage: train_post_training_stop.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
export XDG_CACHE_HOME="$dir/cache"  # no cached ceilings: the run measures them, as on a new machine
args=(train -m "$fixtures/encoders/bert-cls2-f32" -k "$fixtures/tokenizers/tiny-wordpiece" -d "$fixtures/train/tiny.csv"
      --max-steps 8 -b 4 --seed 5 --runs-dir "$dir" --no-progress)
fail() { echo "FAIL: $*"; exit 1; }
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v:=v[k] for k in sys.argv[2:]]; print(json.dumps(v))' "$@"; }
fingerprint() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . | sort); }

# Starts a run that waits at `piece`, sends SIGINT once its line is printed (and `delay` seconds
# more); its exit status in $status.
interrupt_at() {
  local piece=$1 line=$2 run=$3 delay=${4:-0}
  TACH_TEST_HOLD_AT=$piece "$tach" "${args[@]}" --run-id "$run" >"$dir/$run.out" 2>"$dir/$run.err" &
  pid=$!
  for _ in $(seq 1 6000); do
    grep -q "$line" "$dir/$run.err" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.01
  done
  grep -q "$line" "$dir/$run.err" || { cat "$dir/$run.err"; fail "$run never said: $line"; }
  sleep "$delay"
  kill -INT "$pid"
  status=0
  wait "$pid" || status=$?
  pid=""
}

# 1. Stopped before saving the model: the measured steps are in summary.json; --resume saves it.
interrupt_at save-model "saving the model to" before-save
[ "$status" = 130 ] || { cat "$dir/before-save.err"; fail "stopped before saving: exit $status, want 130"; }
grep -q "stopped: after training's 8 steps, before saving the model: summary.json" "$dir/before-save.err" ||
  { cat "$dir/before-save.err"; fail "no message saying where it stopped and what was kept"; }
run="$dir/before-save"
median=$(field "$run/summary.json" step_ms_median)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$median" || fail "summary.json median is $median"
[ "$(field "$run/summary.json" post_training_pending)" = '["saving the model"]' ] || fail "pending work not listed"
[ ! -d "$run/model" ] || fail "the model was saved although the stop came before it"
"$tach" train --resume "$run" --no-progress >"$dir/resume1.out" 2>&1 || { cat "$dir/resume1.out"; fail "resume failed"; }
[ -f "$run/model/model.safetensors" ] || fail "--resume did not save the model"
[ "$(field "$run/summary.json" step_ms_median)" = "$median" ] || fail "--resume changed the measured median"
[ "$(field "$run/summary.json" post_training_pending)" = '[]' ] || fail "--resume left work pending"
[ "$(field "$run/summary.json" steps)" = 8 ] || fail "steps changed"

# 2. A finished run resumed: says so, exits 0, and not one byte of its directory changes.
before=$(fingerprint "$run")
"$tach" train --resume "$run" --no-progress >"$dir/resume2.out" 2>&1 || { cat "$dir/resume2.out"; fail "resume of a finished run failed"; }
grep -q "finished already: 8 steps" "$dir/resume2.out" || { cat "$dir/resume2.out"; fail "no 'finished already'"; }
[ "$(fingerprint "$run")" = "$before" ] || fail "resuming a finished run changed its directory"

# 3. Stopped while the ops are to be judged (the ceilings measured first): the model and the
#    summary are kept, the op verdicts are said to be missing, and the run counts as finished.
interrupt_at op-verdicts "measuring this machine's ceilings" before-ops
[ "$status" = 130 ] || { cat "$dir/before-ops.err"; fail "stopped before the op verdicts: exit $status, want 130"; }
run="$dir/before-ops"
[ -f "$run/model/model.safetensors" ] || fail "the model saved before the stop is missing"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$(field "$run/summary.json" step_ms_median)" ||
  fail "summary.json lost the measured steps"
field "$run/summary.json" top_ops_note | grep -q "not judged" || fail "the missing op verdicts are not said"
before=$(fingerprint "$run")
"$tach" train --resume "$run" --no-progress >"$dir/resume3.out" 2>&1 || fail "resume after the op-verdict stop failed"
grep -q "finished already" "$dir/resume3.out" || { cat "$dir/resume3.out"; fail "not finished after the model was saved"; }
[ "$(fingerprint "$run")" = "$before" ] || fail "resuming changed the directory"

# 4. Killed (no summary.json at all) after the last step: --resume writes it from steps.jsonl.
rm "$run/summary.json"
"$tach" train --resume "$run" --no-progress >"$dir/resume4.out" 2>&1 || { cat "$dir/resume4.out"; fail "resume without summary failed"; }
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$(field "$run/summary.json" step_ms_median)" ||
  fail "summary.json rebuilt with a zero median"
grep -q "medians of the 8 steps in steps.jsonl" "$dir/resume4.out" || { cat "$dir/resume4.out"; fail "no note on the rebuilt summary"; }
# 5. Stopped while the ceilings are being measured (no hold: they take seconds, more under load):
#    the measurement hears the Ctrl-C, and the run exits 130 with summary.json and the model kept.
export XDG_CACHE_HOME="$dir/cache-2"
interrupt_at none "measuring this machine's ceilings" during-ceilings 0.3
[ "$status" = 130 ] || { cat "$dir/during-ceilings.err"; fail "Ctrl-C while measuring the ceilings: exit $status, want 130"; }
grep -q "stopped while measuring this machine's ceilings" "$dir/during-ceilings.err" ||
  { cat "$dir/during-ceilings.err"; fail "no message saying the ceilings measurement was stopped"; }
run="$dir/during-ceilings"
[ -f "$run/model/model.safetensors" ] || fail "the model saved before the stop is missing"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$(field "$run/summary.json" step_ms_median)" ||
  fail "summary.json lost the measured steps"
[ "$(field "$run/summary.json" post_training_pending)" = '[]' ] || fail "the saved model is still listed as pending"
[ ! -d "$dir/cache-2/tach" ] || [ -z "$(ls -A "$dir/cache-2/tach")" ] || fail "a stopped measurement was cached"

echo "interrupts after training keep summary.json; resume finishes; a finished run is left alone"
