// RMSNorm on the GPU, with the pre-norm residual add fused: h += delta, out = weight * h * rstd.
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/rms_norm.h"

namespace tach::ops {
namespace {

// The first kCached elements of each thread stay in registers between the sum and the scaling,
// with their weights loaded beside them, so a row of up to 8 * 256 values (every hidden size of
// the presets) is read once, in loads that are all in flight together; the rest of a wider row is
// read again. A decoding step runs two of these per layer on one row: latency, not bandwidth.
constexpr int kCached = 8;

__global__ void rms_norm_kernel(float* out, float* h, const float* delta, const float* weight, int64_t C, float eps) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  float v[kCached], w[kCached];
  float squares = 0.0f;
#pragma unroll
  for (int i = 0; i < kCached; ++i) {
    const int64_t c = threadIdx.x + int64_t(i) * blockDim.x;
    v[i] = 0.0f, w[i] = 0.0f;
    if (c < C) {
      v[i] = h[base + c];
      w[i] = weight[c];
      if (delta) v[i] += delta[base + c];
    }
  }
#pragma unroll
  for (int i = 0; i < kCached; ++i) {
    const int64_t c = threadIdx.x + int64_t(i) * blockDim.x;
    if (delta && c < C) h[base + c] = v[i];
    squares += v[i] * v[i];
  }
  // Each thread reads back only the elements it wrote itself, so h needs no shared copy.
  for (int64_t c = threadIdx.x + int64_t(kCached) * blockDim.x; c < C; c += blockDim.x) {
    float x = h[base + c];
    if (delta) {
      x += delta[base + c];
      h[base + c] = x;
    }
    squares += x * x;
  }
  const float rstd = 1.0f / sqrtf(cuda::block_sum(squares, scratch) / float(C) + eps);
#pragma unroll
  for (int i = 0; i < kCached; ++i) {
    const int64_t c = threadIdx.x + int64_t(i) * blockDim.x;
    if (c < C) out[base + c] = w[i] * (v[i] * rstd);
  }
  for (int64_t c = threadIdx.x + int64_t(kCached) * blockDim.x; c < C; c += blockDim.x)
    out[base + c] = weight[c] * (h[base + c] * rstd);
}

// Per-head RMSNorm in place (Qwen3's and Gemma's q/k norms): one warp per (token, head), the
// head's D values read once into the warp's sum and written back scaled.
__global__ void rms_norm_heads_kernel(float* x, int64_t ld, int64_t N, int64_t heads, int64_t D, const float* weight,
                                      float eps) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (warp >= N * heads) return;  // whole warps leave together: the shuffles below stay full
  float* v = x + (warp / heads) * ld + (warp % heads) * D;
  float squares = 0.0f;
  for (int64_t d = lane; d < D; d += 32) squares += v[d] * v[d];
  const float rstd = 1.0f / sqrtf(cuda::warp_sum(squares) / float(D) + eps);
  for (int64_t d = lane; d < D; d += 32) v[d] = weight[d] * (v[d] * rstd);
}

}  // namespace

void rms_norm_heads_forward_cuda(int device, float* x, int64_t ld, int64_t N, int64_t heads, int64_t D,
                                 const float* weight, float eps) {
  if (N * heads == 0) return;
  const int64_t threads = N * heads * 32;
  rms_norm_heads_kernel<<<unsigned((threads + 255) / 256), 256, 0, cuda::stream(device)>>>(x, ld, N, heads, D, weight,
                                                                                           eps);
  cuda::check_launch("rms_norm_heads_kernel");
}

void rms_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* weight, int64_t N,
                           int64_t C, float eps) {
  if (N == 0) return;
  rms_norm_kernel<<<unsigned(N), 256, 0, cuda::stream(device)>>>(out, h, delta, weight, C, eps);
  cuda::check_launch("rms_norm_kernel");
}

}  // namespace tach::ops
