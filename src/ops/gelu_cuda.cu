// GELU (erf form) on the GPU; in place when out == x. Runs after a cuBLASLt GEMM with its bias
// epilogue, because cuBLASLt's own GELU epilogue is the tanh approximation.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/gelu.h"

namespace tach::ops {
namespace {

__global__ void gelu_kernel(float* out, const float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    out[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  }
}

}  // namespace

void gelu_forward_cuda(int device, float* out, const float* x, int64_t n) {
  if (n == 0) return;
  gelu_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(out, x, n);
  cuda::check_launch("gelu_kernel");
}

}  // namespace tach::ops
