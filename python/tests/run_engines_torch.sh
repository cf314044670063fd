#!/usr/bin/env bash
# The PyTorch and ONNX Runtime engine workers against transformers on tiny fixtures (CPU), with the
# development virtualenv (TACH_REF_PYTHON, default ~/tach-ref/bin/python); skips (77), saying why,
# without it.
set -uo pipefail
build="$1"
python="${TACH_REF_PYTHON:-$HOME/tach-ref/bin/python}"
[ -x "$python" ] || { echo "skip: no development virtualenv at $python (scripts/peers/README.md)"; exit 77; }
"$python" -c "import torch, transformers, pytest" 2>/dev/null || { echo "skip: $python lacks torch, transformers or pytest"; exit 77; }
PYTHON="$python" exec "$(dirname "$0")/run_pytest.sh" "$build" test_engines_torch.py
