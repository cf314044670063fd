#!/usr/bin/env bash
# scripts/peers/gpu_peers.py's arguments, its ceilings parser, its dry run and every case run tiny
# on the CPU (test_gpu_peers.py). Needs a Python with torch, transformers and pytest (the
# development virtualenv: REF_PYTHON, or ~/tach-ref); skips (exit 77), saying why, without one.
# Usage: gpu_peers.sh path/to/tach
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${REF_PYTHON:-$HOME/tach-ref/bin/python}
if ! "$python" -c "import torch, transformers, pytest" 2>/dev/null; then
  echo "SKIP: no Python with torch, transformers and pytest at $python (set REF_PYTHON; scripts/peers/README.md)"
  exit 77
fi
TACH=$1 exec nice -n 19 "$python" -m pytest -q -p no:cacheprovider "$here/test_gpu_peers.py"
