// Dropout on the GPU: the mask of ops/dropout_mask.h (the CPU's exactly), drawn per element in a
// grid-stride loop; p = 0 is a copy.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/dropout.h"

namespace tach::ops {
namespace {

__global__ void dropout_kernel(float* out, const float* in, int64_t n, uint64_t key, uint32_t threshold, float scale) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = dropout_keeps_at(key, i, threshold) ? in[i] * scale : 0.0f;
}

}  // namespace

void dropout_cuda(int device, float* out, const float* in, int64_t n, float p, uint64_t key) {
  if (n == 0) return;
  if (p <= 0.f) {
    if (out != in)
      cuda::check(cudaMemcpyAsync(out, in, sizeof(float) * size_t(n), cudaMemcpyDeviceToDevice, cuda::stream(device)),
                  "dropout: cudaMemcpyAsync");
    return;
  }
  const float scale = 1.0f / (1.0f - p);  // as dropout_apply: the same float
  dropout_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(out, in, n, key, dropout_threshold(p),
                                                                           scale);
  cuda::check_launch("dropout_kernel");
}

}  // namespace tach::ops
