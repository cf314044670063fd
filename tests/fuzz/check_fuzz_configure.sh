#!/bin/sh
# `make fuzz`'s configuration, as the Makefile gives it, less -DTACH_PYTHON=OFF: the fuzz build
# must leave the Python module out by itself (a module built from the sanitized library cannot be
# imported by python3, and generating its stubs imports it). Skips (77) without clang.
#   tests/fuzz/check_fuzz_configure.sh SOURCE_DIR
src=${1:?usage: $0 SOURCE_DIR}
command -v clang++ >/dev/null 2>&1 || { echo "SKIP: no clang++ (make fuzz needs it)"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$(CC=clang CXX=clang++ cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTACH_BUILD_FUZZ=ON \
  -DTACH_BUILD_TESTS=OFF -DTACH_BUILD_BENCH=OFF -DTACH_CUDA=OFF 2>&1) || { echo "$out" | tail -20; exit 1; }
echo "$out" | grep 'tach: CUDA='
echo "$out" | grep -q 'python=OFF' || { echo "the fuzz build would build the Python module"; exit 1; }
