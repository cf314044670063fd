#!/usr/bin/env bash
# Installs tach into a temporary prefix, builds examples/ against it with find_package(tach), the
# way a user's project would, and runs them. Usage: examples_from_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/examples" -B "$tmp/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/examples" -j 2 >/dev/null
cd "$tmp"
"$tmp/examples/watch_training"
"$tmp/examples/classify_and_profile" >/dev/null
test -s watch_training.json && test -s watch_training.jsonl && test -s classify_trace.json
echo "examples built from the installed tach and ran"
