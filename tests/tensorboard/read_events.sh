#!/usr/bin/env bash
# TensorBoard's own reader on the event files tach train, tach bench and tach bench --train write.
# Needs a Python with tensorboard and pytest (the development virtualenv: REF_PYTHON, or
# ~/tach-ref); skips (exit 77), saying why, without one.
# Usage: read_events.sh path/to/tach fixtures_dir
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${REF_PYTHON:-$HOME/tach-ref/bin/python}
if ! "$python" -c "import tensorboard, pytest" 2>/dev/null; then
  echo "SKIP: no Python with tensorboard and pytest at $python (set REF_PYTHON; scripts/peers/README.md)"
  exit 77
fi
TACH=$1 TACH_FIXTURES=$2 exec "$python" -m pytest -q -p no:cacheprovider "$here/test_event_files.py"
