#!/usr/bin/env bash
# tach train --distill-from: a DistilBERT student taught by a BERT teacher reports the teacher's
# phase (steps.jsonl, summary.json, the terminal) and the loss's two terms; LoRA and fused students
# distil too; a teacher of other labels, T <= 0 and alpha outside [0, 1] are refused by name.
# Usage: train_distill.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
student="$fixtures/encoders/distilbert-cls2-f32"
teacher="$fixtures/encoders/bert-cls2-f32"
common=(-m "$student" -k "$fixtures/tokenizers/tiny-wordpiece" -d "$fixtures/train/tiny.csv" -s 16 -b 4
  --max-steps 3 --runs-dir "$dir" --no-progress --no-tensorboard)
fail() { echo "FAIL: $*"; exit 1; }

"$tach" train --help >"$dir/help.out"
grep -q -- "--distill-from" "$dir/help.out" || fail "--help has no --distill-from"
"$tach" train "${common[@]}" --distill-from "$teacher" --distill-temperature 3 --distill-alpha 0.7 --run-id kd \
  >"$dir/kd.out" 2>"$dir/kd.err" || { cat "$dir/kd.err"; fail "distillation run"; }
grep -Eq "^teacher: median [0-9.]+ ms a step" "$dir/kd.out" || fail "no teacher line: $(cat "$dir/kd.out")"
grep -q "distilling from $teacher" "$dir/kd/run.log" || fail "the run does not say what teaches it"
python3 - "$dir/kd" <<'PY' || fail "steps.jsonl or summary.json lacks the teacher"
import json, sys
run = sys.argv[1]
steps = [json.loads(l)["metrics"] for l in open(run + "/steps.jsonl") if "step_ms" in l]
assert len(steps) == 3, steps
for m in steps:
    assert m["teacher_ms"] > 0, m
    assert abs(m["loss"] - (0.7 * m["distill_loss"] + 0.3 * m["task_loss"])) < 1e-6 * max(1, m["loss"]), m
    assert m["distill_loss"] >= 0, m
s = json.load(open(run + "/summary.json"))
assert s["phase_ms_median"]["teacher"] > 0, s["phase_ms_median"]
d = s["distillation"]
assert d["temperature"] == 3 and d["alpha"] == 0.7 and d["teacher_dtype"] == "f32", d
c = json.load(open(run + "/config.json"))["options"]
assert c["distill_from"].endswith("bert-cls2-f32") and c["distill_alpha"] == 0.7, c
PY

# tach report: the teacher is a phase of the step's breakdown.
"$tach" report "$dir/kd" >"$dir/report.out" 2>&1 || { cat "$dir/report.out"; fail "tach report"; }
grep -q "<title>1 teacher: [0-9.]*</title>" "$dir/kd/report.html" || fail "report.html's step breakdown has no teacher"
grep -q "teacher ms (median)" "$dir/kd/report.html" || fail "report.html's summary has no teacher phase"

# A LoRA student, fused, with the teacher in bf16.
"$tach" train "${common[@]}" --distill-from "$teacher" --method lora --exec fused --distill-dtype bf16 \
  --run-id kd-lora >"$dir/lora.out" 2>"$dir/lora.err" || { cat "$dir/lora.err"; fail "LoRA fused distillation"; }
grep -q "^teacher: median" "$dir/lora.out" || fail "LoRA: no teacher line"

# Without a teacher nothing of it is written.
"$tach" train "${common[@]}" --run-id plain >"$dir/plain.out" 2>&1 || fail "plain run"
! grep -q "teacher" "$dir/plain.out" || fail "a run without a teacher mentions one"
! grep -q "teacher_ms" "$dir/plain/steps.jsonl" || fail "teacher_ms without a teacher"

# tach profile --train --distill-from: the teacher's inference is a module of its own beside the
# forward, and the KL op is in the op table.
(cd "$dir" && "$tach" profile --train -m "$student" --distill-from "$teacher" -b 2 -s 8 \
  --profiler-output-dir "$dir/profile" >"$dir/profile.txt" 2>&1) || { cat "$dir/profile.txt"; fail "profile --train"; }
grep -q "^teacher," "$dir/profile/ops_by_module.csv" || fail "profile --train: no teacher module"
grep -q "^kl_distill," "$dir/profile/ops_by_op.csv" || fail "profile --train: no kl_distill op"

refused() {  # refused NAME WANT_IN_MESSAGE ARGS...
  local name=$1 want=$2
  shift 2
  set +e
  "$tach" train "${common[@]}" --run-id "$name" "$@" >"$dir/$name.out" 2>"$dir/$name.err"
  local rc=$?
  set -e
  [ "$rc" -ne 0 ] || fail "$name: accepted"
  grep -q -- "$want" "$dir/$name.err" || fail "$name: $(cat "$dir/$name.err")"
}
refused labels "labels" --distill-from "$fixtures/encoders/bert-cls3-f16"
refused temperature "--distill-temperature" --distill-from "$teacher" --distill-temperature 0
refused alpha "--distill-alpha" --distill-from "$teacher" --distill-alpha 1.5
refused dtype "--distill-dtype" --distill-from "$teacher" --distill-dtype f64
echo "ok"
