#!/usr/bin/env bash
# Run on a lent GPU machine, from the repository root, after scripts/gpu/pack.sh here and with
# .gpu carried: what the machine is, every gpu-labelled test, then a first speed reading.
# Output worth keeping goes to $OUT (the device tool brings it back).
set -uo pipefail
export LD_LIBRARY_PATH="$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export TACH_FIXTURES_DIR="$PWD/tests/fixtures"
out=${OUT:-/tmp/tach-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
.gpu/bin/tach info | tee -a "$out/gpu.txt"
status=0
for t in test_cuda test_cuda_ops test_cuda_models; do
  .gpu/bin/$t --gtest_output="xml:$out/$t.xml" 2>&1 | tail -40 || status=1
done
# Latency and GPU time at batch 1 and 32, sequence 128, on the built-in DistilBERT-base preset.
.gpu/bin/tach bench -m preset:distilbert-base-uncased --device cuda --dtype f32,bf16 -b 1,32 -s 128 \
  --runs-dir "$out/runs" 2>&1 | tail -30 || status=1
exit $status
