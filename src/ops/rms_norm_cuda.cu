// RMSNorm on the GPU, with the pre-norm residual add fused: h += delta, out = weight * h * rstd.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/rms_norm.h"

namespace tach::ops {
namespace {

__global__ void rms_norm_kernel(float* out, float* h, const float* delta, const float* weight, int64_t C, float eps) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  float squares = 0.0f;
  // Each thread reads back only the elements it wrote itself, so h needs no shared copy.
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float v = h[base + c];
    if (delta) {
      v += delta[base + c];
      h[base + c] = v;
    }
    squares += v * v;
  }
  const float rstd = 1.0f / sqrtf(cuda::block_sum(squares, scratch) / float(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) out[base + c] = weight[c] * (h[base + c] * rstd);
}

}  // namespace

void rms_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* weight, int64_t N,
                           int64_t C, float eps) {
  if (N == 0) return;
  rms_norm_kernel<<<unsigned(N), 256, 0, cuda::stream(device)>>>(out, h, delta, weight, C, eps);
  cuda::check_launch("rms_norm_kernel");
}

}  // namespace tach::ops
