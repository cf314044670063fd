#!/bin/sh
# Every committed corpus input, regressions included, through its fuzz target once (libFuzzer's
# -runs=0 runs the corpus and stops), where `make fuzz` has built them in BUILD_FUZZ; skips (77)
# where it has not. A target that crashes, or that UBSan or ASan stops, fails the test.
#   tests/fuzz/replay_corpus.sh BUILD_FUZZ
build=${1:?usage: $0 BUILD_FUZZ}
here=$(cd "$(dirname "$0")" && pwd)
pairs="safetensors:safetensors config:config tokenizer_json:tokenizer_json tokenizer_encode:tokenizer_text
precompiled:precompiled dataset:dataset bench_config:bench_config sentence_config:sentence_config parquet:parquet
slurm_plan:slurm_plan conll:conll trace:trace squad:squad engine_reply:engine_reply"
ran=0
failed=0
for pair in $pairs; do
  binary=$build/tests/fuzz/fuzz_${pair%%:*}
  [ -x "$binary" ] || continue
  ran=$((ran + 1))
  if ! out=$("$binary" -runs=0 "$here/corpus/${pair#*:}" 2>&1); then
    echo "fuzz_${pair%%:*} fails on its corpus:"
    echo "$out" | grep -E 'ERROR|runtime error|SUMMARY|Test unit written' | head -5
    failed=1
  fi
done
[ $ran -gt 0 ] || { echo "SKIP: no fuzz targets in $build (make fuzz builds them)"; exit 77; }
[ $failed -eq 0 ] && echo "$ran fuzz targets ran their corpus cleanly"
exit $failed
