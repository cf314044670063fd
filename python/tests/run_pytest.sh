#!/usr/bin/env bash
# ctest's entry to the Python module's tests: Debian's python3 and pytest by default (PYTHON=...
# for another interpreter, such as the development virtualenv's). Skips (77), saying why, where
# the interpreter, pytest or numpy is missing.
set -uo pipefail
build="$1"; shift
python="${PYTHON:-/usr/bin/python3}"
command -v "$python" >/dev/null || { echo "skip: $python not found"; exit 77; }
"$python" -c "import pytest" 2>/dev/null || { echo "skip: pytest is not installed for $python (python3-pytest)"; exit 77; }
"$python" -c "import numpy" 2>/dev/null || { echo "skip: numpy is not installed for $python (python3-numpy)"; exit 77; }
[ -f "$build/python/tach/__init__.py" ] || { echo "the module is not built: $build/python/tach"; exit 1; }
cd "$(dirname "$0")"
export PYTHONPATH="$build/python" TACH_BINARY="$build/tach" PYTHONDONTWRITEBYTECODE=1
exec "$python" -m pytest -q -p no:cacheprovider "$@"
