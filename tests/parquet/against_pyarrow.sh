#!/usr/bin/env bash
# tach's Parquet reader against pyarrow (test_parquet_vs_pyarrow.py). Needs a Python with pyarrow
# and pytest (the development virtualenv: REF_PYTHON, or ~/tach-ref); skips (exit 77), saying why,
# without one. Usage: against_pyarrow.sh path/to/tach
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${REF_PYTHON:-$HOME/tach-ref/bin/python}
if ! "$python" -c "import pyarrow, pytest" 2>/dev/null; then
  echo "SKIP: no Python with pyarrow and pytest at $python (set REF_PYTHON; scripts/peers/README.md)"
  exit 77
fi
TACH=$1 exec "$python" -m pytest -q -p no:cacheprovider "$here/test_parquet_vs_pyarrow.py"
