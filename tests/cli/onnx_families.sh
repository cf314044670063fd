#!/bin/sh
# tach bench --engine onnxruntime on one family's tiny fixture with the development virtualenv
# (TACH_REF_PYTHON, default ~/tach-ref/bin/python; skips, saying why, without it or its packages):
# the model is exported afresh (a cache of the test's own), checked by the worker against
# transformers on a padded batch of another shape, and its point succeeds with outputs that agree
# with tach's.
# usage: onnx_families.sh TACH FIXTURE_DIR PYTHON_PACKAGE WORK_DIR
set -eu
tach=$1
model=$2
export TACH_PYTHON_PACKAGE="$3"
work=$4
python="${TACH_REF_PYTHON:-$HOME/tach-ref/bin/python}"
[ -x "$python" ] || { echo "skip: no development virtualenv at $python (scripts/peers/README.md)"; exit 77; }
"$python" -c "import torch, transformers, onnxruntime, onnx" 2> /dev/null ||
  { echo "skip: $python lacks torch, transformers, onnxruntime or onnx"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
export XDG_CACHE_HOME="$work/cache"  # a fresh export, not one an earlier run left in ~/.cache

"$tach" bench -m "$model" --engine onnxruntime --python "$python" -b 1 -s 8 -t 1 --runs 2 --warmup 1 \
  --decode-tokens 0 --no-progress --no-tensorboard --runs-dir "$work" --run-id run > "$work/bench.txt" 2>&1 ||
  { cat "$work/bench.txt"; cat "$work/run/engines/onnxruntime.log" 2> /dev/null | tail -40; exit 1; }

"$python" - "$work/run/results.jsonl" << 'PY'
import json, sys
points = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
ort = [p for p in points if p.get("engine") == "onnxruntime"]
assert len(ort) == 1, f"{len(ort)} onnxruntime points in {sys.argv[1]}"
p = ort[0]
assert p["status"] == "ok", f"the onnxruntime point failed: {p.get('reason')}"
run = p["engine_run"]
out = run["outputs"]
print(f"{run['task']}: {out['name']} agree={out['agree']} largest difference {out['max_abs_diff']:.3g} "
      f"(tolerance {out['tolerance']:.3g}); export {run['one_time']['setup_s']:.1f} s")
assert out["checked"] and out["agree"], out
assert run["one_time"]["setup_kind"] == "onnx export" and not run["one_time"]["setup_cached"], run["one_time"]
PY
