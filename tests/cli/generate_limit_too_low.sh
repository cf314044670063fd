#!/bin/sh
# tach generate calls out a bandwidth limit that the steps beat: the ceilings cache of a fresh
# cache directory is measured, then edited down to 1 MB/s, as a figure taken in a slow minute.
# usage: generate_limit_too_low.sh TACH WORK_DIR
set -eu
tach=$1
export XDG_CACHE_HOME="$2"
rm -rf "$XDG_CACHE_HOME"
"$tach" info --ceilings > /dev/null
if ! ls "$XDG_CACHE_HOME"/tach/ceilings-*.json > /dev/null 2>&1; then
  echo "skipped: the machine was busy, so the ceilings were measured under load and not cached"
  exit 77
fi
sed -i -E 's/"(memory(_read)?_bytes_per_s)": [0-9.e+]+/"\1": 1000000.0/' "$XDG_CACHE_HOME"/tach/ceilings-*.json
grep -q '"memory_read_bytes_per_s": 1000000.0' "$XDG_CACHE_HOME"/tach/ceilings-*.json
"$tach" generate -m preset:qwen2-tiny --prompt-len 16 -n 4
