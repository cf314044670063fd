// Device helpers shared by the training attention kernels (ops/attention_train_cuda.cu for the
// encoders, ops/causal_attention_train_cuda.cu for the decoders). Those kernels favour being
// obviously the CPU's function over speed: one block per query row (or key row), the [T, T]
// probabilities and score gradients in device memory, every sum in a fixed order (no atomics), so
// two runs agree bitwise.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "tach/error.h"

namespace tach::cuda {

// Threads per block of every training attention kernel: 4 warps, each taking one key at a time
// for a dot product, and one head channel per thread for the row products.
constexpr int kAttentionTrainThreads = 128;

// a · b over D floats by one warp (lanes stride the channels), returned to every lane.
__device__ __forceinline__ float warp_dot(const float* a, const float* b, int64_t D) {
  float acc = 0.0f;
  for (int64_t d = threadIdx.x & 31; d < D; d += 32) acc += a[d] * b[d];
  return warp_sum(acc);
}

// The grid of one block per row (x) for every (sequence, head) pair (y): CUDA's y extent is
// 65535 at most.
inline dim3 rows_by_heads(int64_t rows, int64_t pairs, const char* op) {
  tach::check(pairs <= 65535 && rows <= 0x7fffffff, std::string(op) + " on CUDA: " + std::to_string(pairs) +
                                                        " (sequence, head) pairs exceed one launch's 65535");
  return dim3(unsigned(rows), unsigned(pairs));
}

}  // namespace tach::cuda
