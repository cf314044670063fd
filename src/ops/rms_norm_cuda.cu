// RMSNorm on the GPU, with the pre-norm residual add fused: h += delta, out = weight * h * rstd
// (inference in f32, bf16 or f16 activations, f32 arithmetic);
// training saves rstd per row (and the per-head form its input). The backwards: one block (one warp
// per head) per row for the input's gradient, and the weight's gradient in fixed chunks of rows
// (ops/norm_grad_cuda.cuh), without atomics.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/norm_grad_cuda.cuh"
#include "ops/rms_norm.h"

namespace tach::ops {
namespace {

// The first kCached elements of each thread stay in registers between the sum and the scaling,
// with their weights loaded beside them, so a row of up to 8 * 256 values (every hidden size of
// the presets) is read once, in loads that are all in flight together; the rest of a wider row is
// read again. A decoding step runs two of these per layer on one row: latency, not bandwidth.
constexpr int kCached = 8;

// T: the activations' element type (h, delta, out); weight f32, arithmetic in f32. In bf16/f16
// h + delta is rounded to T (what h then holds, as transformers' bf16 residual stream) before its
// squares are summed, and out is rounded once.
template <typename T>
__global__ void rms_norm_kernel(T* out, T* h, const T* delta, const float* weight, int64_t C, float eps,
                                float* rstd_out) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  float v[kCached], w[kCached];
  float squares = 0.0f;
#pragma unroll
  for (int i = 0; i < kCached; ++i) {
    const int64_t c = threadIdx.x + int64_t(i) * blockDim.x;
    v[i] = 0.0f, w[i] = 0.0f;
    if (c < C) {
      v[i] = cuda::to_float(h[base + c]);
      w[i] = weight[c];
      if (delta) v[i] = cuda::round_to<T>(v[i] + cuda::to_float(delta[base + c]));
    }
  }
#pragma unroll
  for (int i = 0; i < kCached; ++i) {
    const int64_t c = threadIdx.x + int64_t(i) * blockDim.x;
    if (delta && c < C) h[base + c] = cuda::from_float<T>(v[i]);
    squares += v[i] * v[i];
  }
  // Each thread reads back only the elements it wrote itself, so h needs no shared copy.
  for (int64_t c = threadIdx.x + int64_t(kCached) * blockDim.x; c < C; c += blockDim.x) {
    float x = cuda::to_float(h[base + c]);
    if (delta) {
      x = cuda::round_to<T>(x + cuda::to_float(delta[base + c]));
      h[base + c] = cuda::from_float<T>(x);
    }
    squares += x * x;
  }
  const float rstd = 1.0f / sqrtf(cuda::block_sum(squares, scratch) / float(C) + eps);
  if (rstd_out && threadIdx.x == 0) rstd_out[blockIdx.x] = rstd;
#pragma unroll
  for (int i = 0; i < kCached; ++i) {
    const int64_t c = threadIdx.x + int64_t(i) * blockDim.x;
    if (c < C) out[base + c] = cuda::from_float<T>(w[i] * (v[i] * rstd));
  }
  for (int64_t c = threadIdx.x + int64_t(kCached) * blockDim.x; c < C; c += blockDim.x)
    out[base + c] = cuda::from_float<T>(weight[c] * (cuda::to_float(h[base + c]) * rstd));
}

// Per-head RMSNorm in place (Qwen3's and Gemma's q/k norms): one warp per (token, head), the
// head's D values read once into the warp's sum and written back scaled. Training saves the input
// (saved_in: [N * heads, D], f32 activations only) and rstd ([N * heads]) when they are not null.
template <typename T>
__global__ void rms_norm_heads_kernel(T* x, int64_t ld, int64_t N, int64_t heads, int64_t D, const float* weight,
                                      float eps, float* saved_in, float* rstd_out) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (warp >= N * heads) return;  // whole warps leave together: the shuffles below stay full
  T* v = x + (warp / heads) * ld + (warp % heads) * D;
  float squares = 0.0f;
  for (int64_t d = lane; d < D; d += 32) {
    const float e = cuda::to_float(v[d]);
    if (saved_in) saved_in[warp * D + d] = e;
    squares += e * e;
  }
  const float rstd = 1.0f / sqrtf(cuda::warp_sum(squares) / float(D) + eps);
  if (rstd_out && lane == 0) rstd_out[warp] = rstd;
  for (int64_t d = lane; d < D; d += 32) v[d] = cuda::from_float<T>(weight[d] * (cuda::to_float(v[d]) * rstd));
}

// dinp += rstd * dout * weight - inp * rstd^3 * mean(dout * weight * inp), one block per row.
// dinp may be dout: each thread reads an element before writing it.
__global__ void rms_norm_backward_kernel(float* dinp, const float* dout, const float* inp, const float* weight,
                                         const float* rstd, int64_t C) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  const float r = rstd[blockIdx.x];
  float dot = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) dot += dout[base + c] * weight[c] * inp[base + c];
  const float k2 = r * r * r * cuda::block_sum(dot, scratch) / float(C);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    dinp[base + c] += r * dout[base + c] * weight[c] - inp[base + c] * k2;
}

// The per-head backward in place: dx (stride ld) holds d(out) on entry and d(in) on exit; one warp
// per (token, head).
__global__ void rms_norm_heads_backward_kernel(float* dx, int64_t ld, const float* inp, const float* weight,
                                               const float* rstd, int64_t N, int64_t heads, int64_t D) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  if (warp >= N * heads) return;  // whole warps leave together
  float* g = dx + (warp / heads) * ld + (warp % heads) * D;
  const float* v = inp + warp * D;
  const float r = rstd[warp];
  float dot = 0.0f;
  for (int64_t d = lane; d < D; d += 32) dot += g[d] * weight[d] * v[d];
  const float k2 = r * r * r * cuda::warp_sum(dot) / float(D);
  for (int64_t d = lane; d < D; d += 32) g[d] = r * g[d] * weight[d] - v[d] * k2;
}

// partial[k, d] = Σ over chunk k's tokens n (in order) and their heads h (in order) of
// dout[n, h, d] * inp[n, h, d] * rstd[n, h]. The plain form is heads = 1, ld = D = C.
// grid: (column blocks, chunks).
__global__ void rms_norm_weight_partials(float* partial, const float* dout, int64_t ld, const float* inp,
                                         const float* rstd, int64_t N, int64_t heads, int64_t D) {
  const int64_t d = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d >= D) return;
  const int64_t k = blockIdx.y, end = (k + 1) * kNormGradRows < N ? (k + 1) * kNormGradRows : N;
  float acc = 0.0f;
  for (int64_t n = k * kNormGradRows; n < end; ++n)
    for (int64_t h = 0; h < heads; ++h)
      acc += dout[n * ld + h * D + d] * inp[(n * heads + h) * D + d] * rstd[n * heads + h];
  partial[k * D + d] = acc;
}

// dweight += Σ_n Σ_h dout * inp * rstd, deterministic (see ops/norm_grad_cuda.cuh). Queued before
// the kernel that overwrites dout (the per-head form's in-place backward).
void rms_norm_weight_grad(int device, float* dweight, const float* dout, int64_t ld, const float* inp,
                          const float* rstd, int64_t N, int64_t heads, int64_t D) {
  const Tensor partial = norm_grad_partials(device, N, D);
  const dim3 grid(unsigned((D + kNormGradThreads - 1) / kNormGradThreads), unsigned(norm_grad_chunks(N)));
  rms_norm_weight_partials<<<grid, kNormGradThreads, 0, cuda::stream(device)>>>(partial.data<float>(), dout, ld, inp,
                                                                                rstd, N, heads, D);
  cuda::check_launch("rms_norm_weight_partials");
  launch_add_norm_grad_partials(device, dweight, partial.data<float>(), norm_grad_chunks(N), D, D);
}

}  // namespace

void rms_norm_heads_forward_cuda(int device, DType dtype, void* x, int64_t ld, int64_t N, int64_t heads, int64_t D,
                                 const float* weight, float eps) {
  if (N * heads == 0) return;
  const int64_t threads = N * heads * 32;
  cuda::dispatch_activation(dtype, "rms_norm_heads", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rms_norm_heads_kernel<T><<<unsigned((threads + 255) / 256), 256, 0, cuda::stream(device)>>>(
        static_cast<T*>(x), ld, N, heads, D, weight, eps, nullptr, nullptr);
  });
  cuda::check_launch("rms_norm_heads_kernel");
}

void rms_norm_heads_forward_cuda(int device, float* x, int64_t ld, int64_t N, int64_t heads, int64_t D,
                                 const float* weight, float eps, float* saved_in, float* rstd) {
  if (N * heads == 0) return;
  const int64_t threads = N * heads * 32;
  rms_norm_heads_kernel<float><<<unsigned((threads + 255) / 256), 256, 0, cuda::stream(device)>>>(
      x, ld, N, heads, D, weight, eps, saved_in, rstd);
  cuda::check_launch("rms_norm_heads_kernel");
}

void rms_norm_forward_cuda(int device, DType dtype, void* out, void* h, const void* delta, const float* weight,
                           int64_t N, int64_t C, float eps) {
  if (N == 0) return;
  cuda::dispatch_activation(dtype, "rms_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    rms_norm_kernel<T><<<unsigned(N), 256, 0, cuda::stream(device)>>>(
        static_cast<T*>(out), static_cast<T*>(h), static_cast<const T*>(delta), weight, C, eps, nullptr);
  });
  cuda::check_launch("rms_norm_kernel");
}

void rms_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* weight, int64_t N,
                           int64_t C, float eps, float* rstd) {
  if (N == 0) return;
  rms_norm_kernel<float><<<unsigned(N), 256, 0, cuda::stream(device)>>>(out, h, delta, weight, C, eps, rstd);
  cuda::check_launch("rms_norm_kernel");
}

void rms_norm_backward_cuda(int device, float* dinp, float* dweight, const float* dout, const float* inp,
                            const float* weight, const float* rstd, int64_t N, int64_t C) {
  if (N == 0 || C == 0) return;
  if (dweight) rms_norm_weight_grad(device, dweight, dout, C, inp, rstd, N, 1, C);
  rms_norm_backward_kernel<<<unsigned(N), 256, 0, cuda::stream(device)>>>(dinp, dout, inp, weight, rstd, C);
  cuda::check_launch("rms_norm_backward_kernel");
}

void rms_norm_heads_backward_cuda(int device, float* dx, int64_t ld, const float* inp, const float* weight,
                                  const float* rstd, float* dweight, int64_t N, int64_t heads, int64_t D) {
  if (N * heads == 0 || D == 0) return;
  if (dweight) rms_norm_weight_grad(device, dweight, dx, ld, inp, rstd, N, heads, D);  // before dx is overwritten
  const int64_t threads = N * heads * 32;
  rms_norm_heads_backward_kernel<<<unsigned((threads + 255) / 256), 256, 0, cuda::stream(device)>>>(dx, ld, inp, weight,
                                                                                                    rstd, N, heads, D);
  cuda::check_launch("rms_norm_heads_backward_kernel");
}

}  // namespace tach::ops
