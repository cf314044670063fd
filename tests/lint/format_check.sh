#!/usr/bin/env bash
# Every tracked C++ file as .clang-format writes it (the first half of `make lint`; `make format`
# fixes a failure): git's tracked files, or every C++ file of the source folders where git is absent.
# Skips (77), saying why, without clang-format.
set -euo pipefail
repo="$1"
command -v clang-format >/dev/null || { echo "skip: clang-format is not installed (scripts/setup.sh installs it)"; exit 77; }
cd "$repo"
if command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find src include tools tests bench examples python -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
[ "${#files[@]}" -gt 0 ] || { echo "no C++ files found under $repo"; exit 1; }
if ! clang-format --dry-run --Werror "${files[@]}" 2> /tmp/tach-format-check.$$; then
  grep -E '^[^ ].*: error:' /tmp/tach-format-check.$$ | cut -d: -f1 | sort -u | sed 's/^/not formatted: /'
  rm -f /tmp/tach-format-check.$$
  echo "run: make format"
  exit 1
fi
rm -f /tmp/tach-format-check.$$
echo "${#files[@]} files formatted as .clang-format says ($(clang-format --version | head -1))"
