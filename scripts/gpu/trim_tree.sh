#!/usr/bin/env bash
# The device tool sends the working tree (tracked files that are there, untracked ones git does not
# ignore) with the carried pack, 64 MiB in all; the tree alone is some 43 MiB, most of it test
# fixtures the GPU machine never reads (tokenizer goldens, heads, embeddings). Run here, around a
# call, and only when nothing else reads those fixtures meanwhile (other tests would miss them):
#   scripts/gpu/trim_tree.sh hide      # moves them to $HOLD (default /tmp/tach-gpu-hold)
#   ... the device call ...
#   scripts/gpu/trim_tree.sh restore   # puts every one back
# Nothing is deleted; `hide` refuses when something is already held, `restore` when a path is back.
set -euo pipefail
cd "$(dirname "$0")/../.."
hold=${HOLD:-/tmp/tach-gpu-hold}
# What scripts/gpu/check.sh and the gpu-labelled tests read stays: tests/fixtures/{train,encoders,
# decoders,lora,nf4,distill,...} and the tokenizer its training runs use (tiny-wordpiece).
hidden() {
  for d in tests/fixtures/tokenizers/*; do [ "$d" = tests/fixtures/tokenizers/tiny-wordpiece ] || echo "$d"; done
  echo tests/fixtures/heads
  echo tests/fixtures/embeddings
}
case "${1:-}" in
  hide)
    [ ! -e "$hold" ] || { echo "trim_tree: $hold already holds a hidden tree: restore it first" >&2; exit 1; }
    hidden | while read -r p; do mkdir -p "$hold/$(dirname "$p")" && mv "$p" "$hold/$p"; done
    echo "hidden: $(du -sh "$hold" | cut -f1) in $hold" ;;
  restore)
    [ -d "$hold" ] || { echo "trim_tree: nothing held in $hold" >&2; exit 1; }
    held=$(cd "$hold" && { find tests/fixtures -mindepth 1 -maxdepth 1 ! -name tokenizers
                           find tests/fixtures/tokenizers -mindepth 1 -maxdepth 1 2>/dev/null || true; })
    for p in $held; do
      [ ! -e "$p" ] || { echo "trim_tree: $p is in the tree again: its held copy stays in $hold" >&2; exit 1; }
      mv "$hold/$p" "$p"
    done
    find "$hold" -depth -type d -empty -delete
    [ ! -e "$hold" ] || { echo "trim_tree: $hold still holds files: look there" >&2; exit 1; }
    ! git status --porcelain | grep -q '^ D' || { echo "trim_tree: tracked files are still missing" >&2; exit 1; }
    echo "restored" ;;
  *) echo "usage: scripts/gpu/trim_tree.sh hide|restore" >&2; exit 2 ;;
esac
