"""Paths the tests share: the built module comes first on sys.path (PYTHONPATH=build/python), the
tach executable is TACH_BINARY (ctest sets both), fixtures are the C++ suite's."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def _binary():
    b = os.environ.get("TACH_BINARY", os.path.join(REPO, "build", "tach"))
    if not os.path.exists(b):
        pytest.skip(f"the tach executable is not built ({b})")
    return b


@pytest.fixture
def tach_binary():
    return _binary()


@pytest.fixture
def fixtures():
    return FIXTURES


def run_cli(*args, check=True):
    """The executable's stdout (the comparison the module's results must equal)."""
    p = subprocess.run([_binary(), *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"tach {' '.join(map(str, args))} failed ({p.returncode}): {p.stderr}")
    return p
