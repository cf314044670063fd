#!/bin/sh
# tach train --task question-answering on a model with 32 positions: the default windows follow the
# model (32 tokens, stride 16) and the run says so; --max-length 64 is refused naming the limit.
set -eu
tach=$1 fx=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
model=$fx/heads/bert-qa-f32
common="--task question-answering -d $fx/question_answering/squad-v1.json -k $fx/question_answering/tokenizer-tiny
  --max-steps 1 --no-progress --no-tensorboard --runs-dir $work/runs"
fail() { echo "FAIL: $1"; exit 1; }

# shellcheck disable=SC2086
"$tach" train -m "$model" $common > "$work/default.out" 2>&1 || { cat "$work/default.out"; fail "the default windows"; }
grep -qF "question-answering windows of 32 tokens, $model's 32 positions (the tokens a row can hold), not the default 384; --doc-stride 16" \
  "$work/default.out" || { cat "$work/default.out"; fail "no note of the fitted windows"; }
python3 - "$work/runs" <<'PY' || fail "the run's config.json"
import glob, json, sys
(run,) = glob.glob(sys.argv[1] + "/train-*")
c = json.load(open(run + "/config.json"))
assert c["options"]["max_length"] == 32 and c["options"]["doc_stride"] == 16, c["options"]
assert any("windows of 32 tokens" in n for n in c["model"]["notes"]), c["model"]["notes"]
PY
echo "ok: the default windows follow the model's 32 positions, in the output and the run's notes"

set +e
# shellcheck disable=SC2086
msg=$("$tach" train -m "$model" $common --max-length 64 --doc-stride 16 2>&1)
rc=$?
set -e
[ "$rc" -eq 2 ] && echo "$msg" | grep -qF -- "--max-length 64 is past $model's 32 positions (the tokens a row can hold): give --max-length 32 or less" ||
  fail "--max-length 64 on 32 positions: rc $rc: $msg"
[ ! -d "$work/runs" ] || [ "$(ls "$work/runs" | wc -l)" -eq 1 ] || fail "a refused run left a run directory"
echo "ok: --max-length past the model's positions is refused, naming them"
