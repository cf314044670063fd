// LayerNorm on the GPU: one block per row, the row (x + residual) held in shared memory so that
// out may alias x or the residual (the encoder writes h = LayerNorm(proj + h) in place). The
// pre-norm form (ModernBERT) also writes the sum back (h += delta) and may have no bias.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/layer_norm.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

__global__ void layer_norm_kernel(float* out, const float* x, const float* residual, const float* gamma,
                                  const float* beta, int64_t C, float eps, float* sum_out) {
  extern __shared__ float row[];  // [C]
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float s = x[base + c] + (residual ? residual[base + c] : 0.0f);
    row[c] = s;
    if (sum_out) sum_out[base + c] = s;  // the same element this thread read: no race
    sum += s;
  }
  const float mean = cuda::block_sum(sum, scratch) / float(C);
  // Two passes, as PyTorch computes the variance.
  float var = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = row[c] - mean;
    var += d * d;
  }
  const float rstd = 1.0f / sqrtf(cuda::block_sum(var, scratch) / float(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    out[base + c] = (row[c] - mean) * rstd * gamma[c] + (beta ? beta[c] : 0.0f);
}

}  // namespace

void layer_norm_forward_cuda(int device, float* out, const float* x, const float* residual, const float* gamma,
                             const float* beta, int64_t N, int64_t C, float eps) {
  const size_t shared = size_t(C) * sizeof(float);
  check(shared <= 48 * 1024,
        "layer_norm on CUDA: rows of " + std::to_string(C) + " floats exceed 48 KiB of shared memory");
  if (N == 0) return;
  layer_norm_kernel<<<unsigned(N), 256, shared, cuda::stream(device)>>>(out, x, residual, gamma, beta, C, eps, nullptr);
  cuda::check_launch("layer_norm_kernel");
}

void pre_layer_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* gamma,
                                 const float* beta, int64_t N, int64_t C, float eps) {
  const size_t shared = size_t(C) * sizeof(float);
  check(shared <= 48 * 1024,
        "layer_norm on CUDA: rows of " + std::to_string(C) + " floats exceed 48 KiB of shared memory");
  if (N == 0) return;
  layer_norm_kernel<<<unsigned(N), 256, shared, cuda::stream(device)>>>(out, h, delta, gamma, beta, C, eps,
                                                                        delta ? h : nullptr);
  cuda::check_launch("layer_norm_kernel");
}

}  // namespace tach::ops
