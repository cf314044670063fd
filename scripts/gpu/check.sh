#!/usr/bin/env bash
# Run on a lent GPU machine, from the repository root, after scripts/gpu/pack.sh here and with
# .gpu carried: what the machine is, every gpu-labelled test, then a first speed reading.
# Output worth keeping goes to $OUT (the device tool brings it back).
set -uo pipefail
pack=/tmp/tach-pack
mkdir -p "$pack" && tar -C "$pack" -xJf .gpu/pack.tar.xz || { echo "no .gpu/pack.tar.xz: run scripts/gpu/pack.sh here and carry .gpu"; exit 2; }
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}:$pack/lib-fallback"
export TACH_FIXTURES_DIR="$PWD/tests/fixtures"
out=${OUT:-/tmp/tach-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
$pack/bin/tach info | tee -a "$out/gpu.txt"
status=0
for t in test_cuda test_cuda_ops test_cuda_models; do
  $pack/bin/$t --gtest_output="xml:$out/$t.xml" 2>&1 | tail -40 || status=1
done
# Latency and GPU time at batch 1 and 32, sequence 128, on the built-in DistilBERT-base preset.
# The run directory stays in /tmp (the device tool brings back at most 8 files); its results come back.
$pack/bin/tach bench -m preset:distilbert-base-uncased --device cuda --dtype f32,bf16 -b 1,32 -s 128 \
  --runs-dir /tmp/tach-runs --run-id gpu-check 2>&1 | tail -30 || status=1
cp /tmp/tach-runs/gpu-check/results.jsonl "$out/" 2>/dev/null || true
# The peers, same weights and inputs (PyTorch eager, torch.compile, ONNX Runtime CUDA): slow, so
# only when asked (PEERS=1), and best in a call of its own.
if [ "${PEERS:-0}" = 1 ]; then
  PYTHONUNBUFFERED=1 python3 scripts/peers/gpu_peers.py --tach $pack/bin/tach --json-out "$out/peers.json" 2>&1 |
    tee "$out/peers.txt" || status=1
fi
exit $status
