// The one elementwise kernel LoRA's CUDA backward needs of its own: adding the gradient that went
// through the dropout mask into dx.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/lora.h"

namespace tach::ops {

namespace {

__global__ void accumulate_kernel(float* dst, const float* src, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}

}  // namespace

void accumulate_cuda(int device, float* dst, const float* src, int64_t n) {
  if (n == 0) return;
  accumulate_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(dst, src, n);
  cuda::check_launch("accumulate_kernel");
}

}  // namespace tach::ops
