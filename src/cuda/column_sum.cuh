// A deterministic column sum for parameter gradients (a bias's db += Σ_m dY[m, :]): each column
// is summed by a fixed set of threads over fixed rows, then combined in a fixed order, so that
// two runs give bitwise-equal sums (no float atomics).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_error.h"

namespace tach::cuda {

constexpr int kColumnSumColumns = 32, kColumnSumLanes = 16;

// sum: [N] +=  x: [M, N] row-major. Block (32, 16): threadIdx.x a column of the block's 32,
// threadIdx.y a lane summing rows y, y + 16, ... in order; lane partials are then added in lane
// order. The template only lets the kernel live in a header included by several files.
template <int kLanes = kColumnSumLanes>
__global__ void column_sum_add_kernel(float* sum, const float* x, int64_t M, int64_t N) {
  __shared__ float partial[kLanes][kColumnSumColumns + 1];
  const int64_t n = int64_t(blockIdx.x) * kColumnSumColumns + threadIdx.x;
  float acc = 0.0f;
  if (n < N)
    for (int64_t m = threadIdx.y; m < M; m += kLanes) acc += x[m * N + n];
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && n < N) {
    float total = partial[0][threadIdx.x];
    for (int lane = 1; lane < kLanes; ++lane) total += partial[lane][threadIdx.x];
    sum[n] += total;
  }
}

inline void column_sum_add(cudaStream_t stream, float* sum, const float* x, int64_t M, int64_t N) {
  if (M == 0 || N == 0) return;
  const dim3 block(kColumnSumColumns, kColumnSumLanes);
  const unsigned grid = unsigned((N + kColumnSumColumns - 1) / kColumnSumColumns);
  column_sum_add_kernel<<<grid, block, 0, stream>>>(sum, x, M, N);
  check_launch("column_sum_add_kernel");
}

}  // namespace tach::cuda
