#!/usr/bin/env bash
# scripts/peers/gpu_train_peers.py run tiny on the CPU (test_train_peers.py). Needs a Python with
# torch, transformers, peft and pytest (the development virtualenv: REF_PYTHON, or ~/tach-ref);
# skips (exit 77), saying why, without one. Usage: train_peers.sh path/to/tach
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${REF_PYTHON:-$HOME/tach-ref/bin/python}
if ! "$python" -c "import torch, transformers, peft, pytest" 2>/dev/null; then
  echo "SKIP: no Python with torch, transformers, peft and pytest at $python (set REF_PYTHON; scripts/peers/README.md)"
  exit 77
fi
TACH=$1 exec "$python" -m pytest -q -p no:cacheprovider "$here/test_train_peers.py"
