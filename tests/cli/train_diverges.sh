#!/usr/bin/env bash
# A loss that turns NaN or infinite stops the run: exit 1, the step named, no model saved, and
# the last checkpoint left as it was. Usage: train_diverges.sh path/to/tach fixtures_dir
set -euo pipefail
tach=$1
fixtures=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
set +e
# lr 1e30: the first update sends the weights to infinity, the next loss is NaN.
"$tach" train -m "$fixtures/encoders/bert-cls2-f32" -k "$fixtures/tokenizers/tiny-wordpiece" \
  -d "$fixtures/train/tiny.csv" --epochs 3 -b 4 --lr 1e30 --max-grad-norm 0 --save-every 1 --runs-dir "$dir" \
  --run-id r --no-progress >"$dir/out" 2>"$dir/err"
code=$?
set -e
cat "$dir/err"
[ "$code" = 1 ] || { echo "exit status $code, expected 1"; exit 1; }
grep -q "diverged at step [0-9]*: the loss is" "$dir/err"
[ ! -d "$dir/r/model" ] || { echo "a diverged run saved a model"; exit 1; }
ls -d "$dir"/r/checkpoint-* >/dev/null
grep -q '"diverged": true' "$dir/r/summary.json"
echo "stopped and kept $(ls -d "$dir"/r/checkpoint-* | xargs -n1 basename)"
