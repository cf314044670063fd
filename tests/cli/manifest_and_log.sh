#!/usr/bin/env bash
# tach manifest / tach verify on a real run directory, checked by sha256sum itself, and the run's
# run.log (what the command printed, a resumed run appended under its own header).
# Usage: manifest_and_log.sh path/to/tach
set -euo pipefail
tach=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run="$dir/run"
"$tach" bench -m preset:bert-tiny -b 1,2 -s 8 --runs 3 --runs-dir "$dir" --run-id run > "$dir/out.txt" 2>&1

# run.log holds what was printed, stdout and stderr, under a header naming the command.
head -1 "$run/run.log" | grep -q "^=== .* tach bench -m preset:bert-tiny" || { echo "no header in run.log"; exit 1; }
grep -q "cpu/f32/t0/b2/s8: .* ms/batch median" "$run/run.log" || { echo "a point's line is missing from run.log"; exit 1; }
grep -q "^Results (ms per batch" "$run/run.log" || { echo "the table is missing from run.log"; exit 1; }
[ "$(tail -n +2 "$run/run.log")" = "$(cat "$dir/out.txt")" ] || { echo "run.log differs from what was printed"; exit 1; }
"$tach" bench --resume "$run" --no-progress > /dev/null 2>&1
[ "$(grep -c '^=== ' "$run/run.log")" = 2 ] || { echo "the resumed run did not append its own header"; exit 1; }

# Names sha256sum has to escape.
printf 'a' > "$run/odd\\name.txt"
printf 'b' > "$run/line
break.txt"
"$tach" manifest "$run" | grep -q "wrote $run/SHA256SUMS"
(cd "$run" && sha256sum --quiet -c SHA256SUMS) || { echo "sha256sum does not accept the manifest"; exit 1; }
"$tach" verify "$run" | grep -q "all .* files match"

# Changed, missing and added files: exit 1, each named.
echo tampered >> "$run/summary.txt"
rm "$run/config.json"
echo new > "$run/later.txt"
set +e
out=$("$tach" verify "$run" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] || { echo "verify exited $rc on a changed directory"; exit 1; }
for want in "CHANGED  summary.txt" "MISSING  config.json" "ADDED    later.txt"; do
  grep -qF "$want" <<< "$out" || { echo "verify did not say: $want"; echo "$out"; exit 1; }
done

# A malformed manifest is an error naming the line.
echo "not a digest line" >> "$run/SHA256SUMS"
set +e
out=$("$tach" verify "$run" 2>&1)
set -e
grep -q "SHA256SUMS:[0-9]*: not a SHA256SUMS line" <<< "$out" || { echo "no error for a bad line: $out"; exit 1; }
echo "manifest, verify and run.log: ok"
