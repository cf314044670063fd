// Sums in double whose order depends only on the launch shape, never on timing: a shuffle tree over
// the warp, then over the block's warps. Two runs of one launch give bitwise-equal results, which
// float atomics would not (the training reductions promise that: the loss, the gradient norm).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tach::cuda {

__device__ __forceinline__ double warp_sum_f64(double v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), returned to every
// thread. scratch: 32 doubles of shared memory, reusable by the next call.
__device__ __forceinline__ double block_sum_f64(double v, double* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  v = warp_sum_f64(v);
  __syncthreads();  // a previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_sum_f64(lane < warps ? scratch[lane] : 0.0);
}

// The smallest v over the block, returned to every thread. scratch: 32 int64 of shared memory.
__device__ __forceinline__ int64_t block_min_i64(int64_t v, int64_t* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int64_t o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o < v ? o : v;
  }
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : INT64_MAX;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const int64_t o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o < v ? o : v;
  }
  return v;
}

// The blocks of a two-stage sum over n elements: a function of n alone (not of the GPU), so the
// partial sums, and the bits of their total, are the same on every device.
inline unsigned fixed_partial_blocks(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : (blocks > 1024 ? 1024 : blocks));
}

}  // namespace tach::cuda
