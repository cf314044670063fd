// The parameter gradients of the norms' CUDA backwards (LayerNorm's gamma and beta, RMSNorm's
// weight), summed over rows without atomics so that two runs agree bitwise: a first kernel gives
// each fixed chunk of kNormGradRows rows its own partial sums per column (rows in order), a second
// adds the chunks' partials into the gradient in chunk order, as the CPU kernels do.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "tach/error.h"
#include "tach/tensor.h"

namespace tach::ops {

// Rows per chunk: the CPU kernels' kRows, so the sums run in the CPU's order.
constexpr int64_t kNormGradRows = 64;
constexpr int kNormGradThreads = 128;

inline int64_t norm_grad_chunks(int64_t N) { return (N + kNormGradRows - 1) / kNormGradRows; }

// Device memory for the partial sums, [chunks, width] f32: freed in stream order when it goes.
inline Tensor norm_grad_partials(int device, int64_t N, int64_t width) {
  check(norm_grad_chunks(N) <= 65535,
        "a norm's backward on CUDA: " + std::to_string(N) + " rows exceed the 65535 chunks of 64 rows one launch sums");
  return Tensor::empty({norm_grad_chunks(N), width}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
}

namespace {

// grad[c] += partial[k * ld + c] for k = 0, 1, ... chunks - 1 in order. One thread per column.
__global__ void add_norm_grad_partials(float* grad, const float* partial, int64_t chunks, int64_t ld, int64_t C) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float acc = grad[c];
  for (int64_t k = 0; k < chunks; ++k) acc += partial[k * ld + c];
  grad[c] = acc;
}

inline void launch_add_norm_grad_partials(int device, float* grad, const float* partial, int64_t chunks, int64_t ld,
                                          int64_t C) {
  const unsigned blocks = unsigned((C + kNormGradThreads - 1) / kNormGradThreads);
  add_norm_grad_partials<<<blocks, kNormGradThreads, 0, cuda::stream(device)>>>(grad, partial, chunks, ld, C);
  cuda::check_launch("add_norm_grad_partials");
}

}  // namespace
}  // namespace tach::ops
