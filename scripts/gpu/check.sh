#!/usr/bin/env bash
# Run on a lent GPU machine, from the repository root, after scripts/gpu/pack.sh here and with
# .gpu carried: what the machine is, every gpu-labelled test, the GPU's ceilings, a bench and a
# profile on the GPU, and (PEERS=1) the peers. Every step has its own time limit, so one hang
# costs one step, not the call. The log goes to $OUT/check.log (the device tool brings back at
# most 8 files); the last lines printed are one row per step.
#   STEPS="tests ceilings bench sweeps profile auto families decode train"   which steps (default: all
#   but sweeps, auto and train); PEERS=1 adds the inference peers (scripts/peers/gpu_peers.py: PEERS_CASES picks
#   its cases, default "distilbert tf32 llama-prefill modernbert decode quantized"; without
#   max-autotune unless PEERS_ARGS says otherwise, e.g. "--skip ort-cuda --compile-timeout 300";
#   PEERS_LIMIT seconds, default 540); TRAIN_PEERS=1 adds the training peers (scripts/peers/gpu_train_peers.py, ~200 s,
#   stopped from starting more past 200 s; TRAIN_PEERS_ARGS passes it flags)
set -uo pipefail
pack=/tmp/tach-pack
mkdir -p "$pack" && tar -C "$pack" -xJf .gpu/pack.tar.xz || { echo "no .gpu/pack.tar.xz: run scripts/gpu/pack.sh here and carry .gpu"; exit 2; }
machine_libs=${LD_LIBRARY_PATH:-}  # before the pack's: what the machine's own Python runs with
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}:$pack/lib-fallback"
# cuDNN (loaded at first use, for fused attention) is not packed (800 MB): PyTorch's wheel has it.
cudnn_lib=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)
[ -d "$cudnn_lib" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cudnn_lib"
# CUPTI (GPU profiles) is the machine's toolkit's; PyTorch's wheel has a copy too, tried last.
cupti_lib=$(python3 -c 'import nvidia.cuda_cupti as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)
[ -d "$cupti_lib" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cupti_lib"
# cuDNN compiles some of its engines at run time through NVRTC: PyTorch's wheel has that too.
nvrtc_lib=$(python3 -c 'import nvidia.cuda_nvrtc as m; print(list(m.__path__)[0] + "/lib")' 2>/dev/null)
[ -d "$nvrtc_lib" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nvrtc_lib"
export TACH_FIXTURES_DIR="$PWD/tests/fixtures"
out=${OUT:-/tmp/tach-gpu}
mkdir -p "$out"
log="$out/check.log"
tach=$pack/bin/tach
steps=${STEPS:-"tests ceilings bench profile families decode"}
[ "${PEERS:-0}" = 1 ] && steps="$steps peers"
[ "${TRAIN_PEERS:-0}" = 1 ] && steps="$steps train-peers"
summary=()

# step NAME SECONDS COMMAND...: runs it under a limit, logs it, remembers its exit status.
step() {
  local name=$1 limit=$2; shift 2
  echo "=== $name ($limit s): $*" >> "$log"
  local t0=$SECONDS
  timeout --kill-after=5 "$limit" "$@" >> "$log" 2>&1
  local rc=$?
  summary+=("$(printf '%-22s exit %-3s %4ss' "$name" "$rc" $((SECONDS - t0)))")
  echo "=== $name: exit $rc after $((SECONDS - t0)) s" >> "$log"
}
wants() { [[ " $steps " == *" $1 "* ]]; }

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv >> "$log" 2>&1
step info 30 "$tach" info
if wants tests; then
  # The packed ones (scripts/gpu/pack.sh's GPU_TESTS), training's first; GTEST_FILTER narrows them,
  # TEST_LIMIT (seconds, each binary) bounds them.
  for t in test_cuda_train test_cuda_ops test_cuda_ops_bf16 test_cuda_linear test_cuda_attention_bf16 test_cuda \
    test_cuda_models test_cuda_bf16_models test_cuda_infer_attention; do
    [ -x "$pack/bin/$t" ] && step "$t" "${TEST_LIMIT:-300}" "$pack/bin/$t" --gtest_brief=1
  done
fi
wants ceilings && step ceilings 120 "$tach" info --ceilings --remeasure
if wants bench; then
  # Latency and GPU time at batch 1 and 32, sequence 128, on the built-in DistilBERT-base preset.
  step bench 300 "$tach" bench -m preset:distilbert-base-uncased --device cuda --dtype f32,bf16 -b 1,32 -s 128 \
    --runs-dir /tmp/tach-runs --run-id gpu-check
  cp /tmp/tach-runs/gpu-check/results.jsonl "$out/bench.jsonl" 2>/dev/null
  # Inference attention A/B in bf16: cuDNN's fused attention where tach chooses it (auto) against tach's f32
  # kernels (TACH_INFER_ATTENTION=tach), on DistilBERT at b32 x 128 and a decoder's prefill (Qwen2.5-0.5B, b8 x
  # 128); each point records the kernels its attention ran ("attention"). One file: attention-ab.jsonl.
  : > "$out/attention-ab.jsonl"
  # bf16 activations end to end (auto) against f32 activations around bf16 GEMMs (TACH_GPU_ACTIVATIONS=f32, how
  # tach ran before), DistilBERT b32 x 128 and the decoder prefill: one file, activations-ab.jsonl.
  : > "$out/activations-ab.jsonl"
  for activations in auto f32; do
    step "bench-activations-$activations" 180 env TACH_GPU_ACTIVATIONS=$activations "$tach" bench \
      -m preset:distilbert-base-uncased --device cuda --dtype bf16 -b 32 -s 128 --runs-dir /tmp/tach-runs \
      --run-id "activations-$activations" --energy-window 0
    cat /tmp/tach-runs/activations-$activations/results.jsonl >> "$out/activations-ab.jsonl" 2>/dev/null
  done
  for attention in auto tach; do
    step "bench-attention-$attention" 180 env TACH_INFER_ATTENTION=$attention "$tach" bench \
      -m preset:distilbert-base-uncased --device cuda --dtype bf16 -b 32 -s 128 --runs-dir /tmp/tach-runs \
      --run-id "attention-$attention" --energy-window 0
    cat /tmp/tach-runs/attention-$attention/results.jsonl >> "$out/attention-ab.jsonl" 2>/dev/null
    step "prefill-attention-$attention" 180 env TACH_INFER_ATTENTION=$attention "$tach" bench \
      -m preset:qwen2.5-0.5b --device cuda --dtype bf16 -b 8 -s 128 --runs-dir /tmp/tach-runs \
      --run-id "prefill-attention-$attention" --energy-window 0
    cat /tmp/tach-runs/prefill-attention-$attention/results.jsonl >> "$out/attention-ab.jsonl" 2>/dev/null
  done
fi
if wants sweeps; then
  # The issue's batch sweeps in bf16: DistilBERT batch 1-256 at 128 tokens, and ModernBERT-base at 1024-8192
  # tokens (its local layers keep time linear in length); the report's findings say where throughput stops
  # growing and why. Memory per category is in every point.
  step sweep-distilbert 240 "$tach" bench -m preset:distilbert-base-uncased --device cuda --dtype bf16 \
    -b 1,2,4,8,16,32,64,128,256 -s 128 --runs-dir /tmp/tach-runs --run-id sweep-distilbert --energy-window 0
  cp /tmp/tach-runs/sweep-distilbert/results.jsonl "$out/sweep-distilbert.jsonl" 2>/dev/null
  step sweep-modernbert 240 "$tach" bench -m preset:modernbert-base --device cuda --dtype bf16 -b 1 \
    -s 1024,2048,4096,8192 --runs-dir /tmp/tach-runs --run-id sweep-modernbert --energy-window 0
  cp /tmp/tach-runs/sweep-modernbert/results.jsonl "$out/sweep-modernbert.jsonl" 2>/dev/null
fi
if wants profile; then
  step profile 180 "$tach" profile -m preset:distilbert-base-uncased --device cuda -b 8 -s 128 \
    --profiler-output-dir /tmp/tach-profile --gzip --sort-by gpu
  cp /tmp/tach-profile/trace.json.gz "$out/" 2>/dev/null
fi
if wants auto; then
  # No --device: the bench's default, auto, picks the GPU and says so in its notes.
  step auto 120 "$tach" bench -m preset:distilbert-base-uncased -b 1 -s 128 --runs-dir /tmp/tach-runs --run-id auto
fi
if wants families; then
  # Every family's preset at its real size: one forward sweep point each, f32 and bf16.
  for m in roberta-base mpnet-base modernbert-base llama-3.2-1b qwen3-0.6b gemma-3-1b; do
    step "bench-$m" 120 "$tach" bench -m preset:$m --device cuda --dtype f32,bf16 -b 8 -s 128 --runs-dir /tmp/tach-runs \
      --run-id "fam-$m" --energy-window 0.5
  done
fi
if wants decode; then
  # Batch-1 decoding on the Qwen2.5-0.5B preset, replayed from a CUDA graph and kernel by kernel,
  # and where a step's time goes.
  for dt in bf16 f32 int8 nf4; do
    for graphs in "" --no-cuda-graphs; do
      step "generate-$dt${graphs:+-eager}" 120 "$tach" generate -m preset:qwen2.5-0.5b --device cuda --dtype $dt \
        --prompt-len 128 -n 64 --ignore-eos --warmup 1 $graphs
    done
  done
  step profile-qwen 120 "$tach" profile -m preset:qwen2.5-0.5b --device cuda --dtype bf16 -b 1 -s 128 \
    --profiler-output-dir /tmp/tach-profile-qwen --sort-by gpu
  # One row: a decoding step's kernels (the GEMVs at their shapes) without the cache.
  step profile-qwen-1row 120 "$tach" profile -m preset:qwen2.5-0.5b --device cuda --dtype bf16 -b 1 -s 1 \
    --profiler-output-dir /tmp/tach-profile-qwen-1 --sort-by gpu --group-by shape --top 12
fi
if wants train; then
  # The whole step on the GPU against the CPU first (fixtures of every family, LoRA, QLoRA; unless
  # the tests step ran them), then
  # tach train for real, a training sweep in f32 and bf16 at the peers' DistilBERT shape, and where
  # a step's time goes.
  ! wants tests && [ -x "$pack/bin/test_cuda_train" ] && step train-steps-test 240 "$pack/bin/test_cuda_train" --gtest_brief=1 \
    --gtest_filter='CudaTrainStep*:CudaTrainCudnn*'
  for dt in f32 bf16; do
    step "train-run-$dt" 180 "$tach" train -m preset:distilbert-base-uncased -d tests/fixtures/train/tiny.csv \
      -k tests/fixtures/tokenizers/tiny-wordpiece --device cuda --dtype $dt --max-steps 20 -b 32 --max-length 128 \
      --runs-dir /tmp/tach-runs --run-id "train-$dt"
    cp "/tmp/tach-runs/train-$dt/summary.json" "$out/train-$dt-summary.json" 2>/dev/null
  done
  step train-bench 240 "$tach" bench --train -m preset:distilbert-base-uncased --device cuda --dtype f32,bf16 -b 32 \
    -s 128 --time-budget 3 --runs-dir /tmp/tach-runs --run-id train-bench
  cp /tmp/tach-runs/train-bench/results.jsonl "$out/train-bench.jsonl" 2>/dev/null
  # The same bf16 point with tach's own f32 attention kernels in place of cuDNN's fused attention (A/B).
  step train-bench-tach-attention 240 env TACH_TRAIN_ATTENTION=tach "$tach" bench --train \
    -m preset:distilbert-base-uncased --device cuda --dtype bf16 -b 32 -s 128 --time-budget 3 --runs-dir /tmp/tach-runs \
    --run-id train-bench-tach-attention
  cp /tmp/tach-runs/train-bench-tach-attention/results.jsonl "$out/train-bench-tach-attention.jsonl" 2>/dev/null
  step train-profile 180 "$tach" profile --train -m preset:distilbert-base-uncased --device cuda -b 32 -s 128 \
    --dtype bf16 --profiler-output-dir /tmp/tach-profile-train --sort-by gpu
fi
if wants peers; then
  # PyTorch with the machine's own libraries, tach through a wrapper with the pack's (as train-peers).
  # max-autotune compiles for minutes per shape: left out unless PEERS_ARGS gives --skip itself.
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LD_LIBRARY_PATH" "$tach" > "$pack/bin/tach-with-libs"
  chmod +x "$pack/bin/tach-with-libs"
  peers_skip=--skip=torch-compile-max-autotune
  [[ " ${PEERS_ARGS:-} " == *" --skip"* ]] && peers_skip=
  cases=${PEERS_CASES:-distilbert tf32 llama-prefill modernbert decode quantized}
  step peers "${PEERS_LIMIT:-540}" env LD_LIBRARY_PATH="$machine_libs" PYTHONUNBUFFERED=1 python3 \
    scripts/peers/gpu_peers.py --tach "$pack/bin/tach-with-libs" --json-out "$out/peers.json" \
    --cases "${cases// /,}" --compile-timeout 300 $peers_skip ${PEERS_ARGS:-}
fi
if wants train-peers; then
  # Without max-autotune (minutes of compiling); TRAIN_PEERS_ARGS changes that, e.g.
  # "--workloads distilbert --engines eager,compile,max-autotune,tach --budget-s 400".
  # PyTorch with the machine's own libraries (the pack's, built elsewhere, are tach's alone): tach
  # through a wrapper that sets them.
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$LD_LIBRARY_PATH" "$tach" > "$pack/bin/tach-with-libs"
  chmod +x "$pack/bin/tach-with-libs"
  step train-peers 420 env LD_LIBRARY_PATH="$machine_libs" PYTHONUNBUFFERED=1 python3 scripts/peers/gpu_train_peers.py \
    --tach "$pack/bin/tach-with-libs" \
    --json-out "$out/train_peers.json" --engines eager,compile,tach,tach-fused --budget-s 200 ${TRAIN_PEERS_ARGS:-}
fi
tail -c 9000 "$log"
echo
printf '%s\n' "${summary[@]}"
