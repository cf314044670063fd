// tanh on the GPU (BERT's pooler; ReLU is a cuBLASLt epilogue and needs no kernel).
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/activation.h"

namespace tach::ops {
namespace {

__global__ void tanh_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = tanhf(x[i]);
}

}  // namespace

void tanh_forward_cuda(int device, float* y, const float* x, int64_t n) {
  if (n == 0) return;
  tanh_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(y, x, n);
  cuda::check_launch("tanh_kernel");
}

}  // namespace tach::ops
