// Sentence-embedding pooling and L2 normalisation on the GPU, the CPU kernels' rules exactly
// (pooling.h): sums in double, so that the mean does not depend on the summation order. The
// hidden states may be bf16 or f16 (read as f32); the pooled vectors are f32.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/pooling.h"

namespace tach::ops {
namespace {

// One thread per (row b, channel c): it walks the row's T tokens. The first and last real token
// are found by every thread alike (T is a sentence, not a corpus).
// hidden: T elements (f32, bf16, f16), each read as f32; out f32.
template <typename T_>
__global__ void pooling_kernel(float* out, int64_t out_stride, const T_* hidden, const int32_t* mask, int64_t T,
                               int64_t C, PoolingMode mode) {
  const int64_t b = blockIdx.y, c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const T_* h = hidden + b * T * C + c;
  const int32_t* m = mask + b * T;
  float* o = out + b * out_stride + c;
  int64_t first = 0, last = T - 1;
  while (first < T && !m[first]) ++first;
  while (last >= 0 && !m[last]) --last;
  switch (mode) {
    case PoolingMode::cls: *o = cuda::to_float(h[(first == T ? 0 : first) * C]); return;
    case PoolingMode::last_token: *o = last < 0 ? 0.0f : cuda::to_float(h[last * C]); return;
    case PoolingMode::max: {
      float v = -INFINITY;
      for (int64_t t = 0; t < T; ++t)
        if (m[t]) v = fmaxf(v, cuda::to_float(h[t * C]));
      *o = v;
      return;
    }
    default: {
      double acc = 0, weight_sum = 0;
      for (int64_t t = 0; t < T; ++t) {
        if (!m[t]) continue;
        const double w = mode == PoolingMode::weighted_mean ? double(t + 1 - first) : 1.0;
        weight_sum += w;
        acc += w * double(cuda::to_float(h[t * C]));
      }
      double denom = fmax(weight_sum, 1e-9);
      if (mode == PoolingMode::mean_sqrt_len) denom = sqrt(denom);
      *o = float(acc / denom);
    }
  }
}

// One block per row: the squared norm in double over the block, then the division.
__global__ void l2_normalize_kernel(float* x, int64_t E) {
  __shared__ double scratch[32];
  float* row = x + int64_t(blockIdx.x) * E;
  double ss = 0;
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x) ss += double(row[e]) * row[e];
  for (int offset = 16; offset > 0; offset >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, offset);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = ss;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < int(blockDim.x >> 5); ++w) total += scratch[w];  // same order in every thread
  const double norm = fmax(sqrt(total), 1e-12);
  for (int64_t e = threadIdx.x; e < E; e += blockDim.x) row[e] = float(row[e] / norm);
}

}  // namespace

void pooling_forward_cuda(int device, float* out, int64_t out_stride, const void* hidden, DType hidden_dtype,
                          const int32_t* mask, int64_t B, int64_t T, int64_t C, PoolingMode mode) {
  if (B * C == 0) return;
  const dim3 grid(unsigned((C + 127) / 128), unsigned(B));
  cuda::dispatch_activation(hidden_dtype, "pooling", [&](auto tag) {
    using E = typename decltype(tag)::type;
    pooling_kernel<<<grid, 128, 0, cuda::stream(device)>>>(out, out_stride, static_cast<const E*>(hidden), mask, T, C,
                                                           mode);
  });
  cuda::check_launch("pooling_kernel");
}

void pooling_forward_cuda(int device, float* out, int64_t out_stride, const float* hidden, const int32_t* mask,
                          int64_t B, int64_t T, int64_t C, PoolingMode mode) {
  pooling_forward_cuda(device, out, out_stride, static_cast<const void*>(hidden), DType::f32, mask, B, T, C, mode);
}

void l2_normalize_forward_cuda(int device, float* x, int64_t B, int64_t E) {
  if (B == 0) return;
  l2_normalize_kernel<<<unsigned(B), 256, 0, cuda::stream(device)>>>(x, E);
  cuda::check_launch("l2_normalize_kernel");
}

}  // namespace tach::ops
