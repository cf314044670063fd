// Each row's first largest logit on the GPU: one block per row, each thread the best of a strided
// share, then a block-wide reduction that keeps the smaller index of equal values.
#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "ops/argmax.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 1024;

__device__ __forceinline__ bool better(float v, int64_t j, float best, int64_t best_j) {
  return v > best || (v == best && j < best_j);
}

__global__ void argmax_kernel(int32_t* out, const float* logits, int64_t V, double softcap) {
  __shared__ float values[kThreads / 32];
  __shared__ int64_t indices[kThreads / 32];
  const float* row = logits + int64_t(blockIdx.x) * V;
  float best = -INFINITY;
  int64_t best_j = V;  // none yet: any real index wins a tie against it
  for (int64_t j = threadIdx.x; j < V; j += blockDim.x) {
    float v = row[j];
    if (softcap > 0) v = float(softcap * tanh(double(v) / softcap));
    if (better(v, j, best, best_j)) best = v, best_j = j;
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float v = __shfl_down_sync(0xffffffffu, best, offset);
    const int64_t j = __shfl_down_sync(0xffffffffu, best_j, offset);
    if (better(v, j, best, best_j)) best = v, best_j = j;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) values[warp] = best, indices[warp] = best_j;
  __syncthreads();
  if (warp != 0) return;
  const int warps = blockDim.x / 32;
  best = lane < warps ? values[lane] : -INFINITY;
  best_j = lane < warps ? indices[lane] : V;
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float v = __shfl_down_sync(0xffffffffu, best, offset);
    const int64_t j = __shfl_down_sync(0xffffffffu, best_j, offset);
    if (better(v, j, best, best_j)) best = v, best_j = j;
  }
  // A row of NaNs only leaves the sentinel: index 0, as std::max_element returns for it.
  if (lane == 0) out[blockIdx.x] = int32_t(best_j < V ? best_j : 0);
}

}  // namespace

void argmax_rows_cuda(int device, int32_t* out, const float* logits, int64_t B, int64_t V, double softcap) {
  argmax_kernel<<<unsigned(B), kThreads, 0, cuda::stream(device)>>>(out, logits, V, softcap);
  cuda::check_launch("argmax_kernel");
}

}  // namespace tach::ops
