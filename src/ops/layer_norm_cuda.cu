// LayerNorm on the GPU: one block per row, the row (x + residual) held in shared memory (in f32)
// so that out may alias x or the residual; the inference forms take f32, bf16 or f16 activations (the encoder writes h = LayerNorm(proj + h) in place). The
// pre-norm form (ModernBERT) also writes the sum back (h += delta) and may have no bias. Training
// saves mean and rstd per row; the fused form drops the branch out first (the CPU's mask, from
// ops/dropout_mask.h) and saves the sum. The backward: one block per row for dinp, and gamma's
// and beta's gradients in fixed chunks of rows (ops/norm_grad_cuda.cuh), without atomics.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/dropout_mask.h"
#include "ops/layer_norm.h"
#include "ops/norm_grad_cuda.cuh"
#include "tach/error.h"

namespace tach::ops {
namespace {

// Dropout applied to the residual (the branch) before the add; off: the residual as is.
struct BranchDropout {
  bool on = false;
  uint64_t key = 0;
  uint32_t threshold = 0;
  float scale = 1.0f;
};

// s = x + dropout(residual) per element (element index n * C + c, as the CPU's mask over [N, C]),
// then out = (s - mean) * rstd * gamma + beta. sum_out (may be x: each thread rewrites only what it
// read) receives s; mean_out, rstd_out: [N] or null. T: the activations' element type (x,
// residual, out, sum_out); gamma, beta f32; statistics in f32. In bf16/f16 the sum s is rounded to
// T before the statistics: transformers adds the residual in the model's dtype (a bf16 tensor)
// and its LayerNorm normalises that rounded sum (in f32), so this is the value it normalises.
template <typename T>
__global__ void layer_norm_kernel(T* out, const T* x, const T* residual, const float* gamma, const float* beta,
                                  int64_t C, float eps, T* sum_out, BranchDropout drop, float* mean_out,
                                  float* rstd_out) {
  extern __shared__ float row[];  // [C]
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    float r = 0.0f;
    if (residual) {
      r = cuda::to_float(residual[base + c]);
      if (drop.on) r = dropout_keeps_at(drop.key, base + c, drop.threshold) ? r * drop.scale : 0.0f;
    }
    const float s = cuda::round_to<T>(cuda::to_float(x[base + c]) + r);
    row[c] = s;
    if (sum_out) sum_out[base + c] = cuda::from_float<T>(s);
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
  if (threadIdx.x == 0 && mean_out) mean_out[blockIdx.x] = mean, rstd_out[blockIdx.x] = rstd;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    out[base + c] = cuda::from_float<T>((row[c] - mean) * rstd * gamma[c] + (beta ? beta[c] : 0.0f));
}

// dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = dout * gamma, one
// block per row. dinp may be dout: each thread reads an element before writing it.
__global__ void layer_norm_backward_kernel(float* dinp, const float* dout, const float* inp, const float* gamma,
                                           const float* mean, const float* rstd, int64_t C) {
  __shared__ float scratch[32];
  const int64_t base = int64_t(blockIdx.x) * C;
  const float m = mean[blockIdx.x], r = rstd[blockIdx.x];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (inp[base + c] - m) * r;
    const float dnorm = dout[base + c] * gamma[c];
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * norm;
  }
  const float dnorm_mean = cuda::block_sum(dnorm_sum, scratch) / float(C);
  const float dnorm_norm_mean = cuda::block_sum(dnorm_norm_sum, scratch) / float(C);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const float norm = (inp[base + c] - m) * r;
    dinp[base + c] += r * (dout[base + c] * gamma[c] - dnorm_mean - norm * dnorm_norm_mean);
  }
}

// partial[k, c] = Σ dout * norm and partial[k, C + c] = Σ dout over chunk k's rows, in order.
// grid: (column blocks, chunks).
__global__ void layer_norm_param_partials(float* partial, const float* dout, const float* inp, const float* mean,
                                          const float* rstd, int64_t N, int64_t C) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int64_t k = blockIdx.y, end = (k + 1) * kNormGradRows < N ? (k + 1) * kNormGradRows : N;
  float pg = 0.0f, pb = 0.0f;
  for (int64_t n = k * kNormGradRows; n < end; ++n) {
    const float g = dout[n * C + c];
    const float norm = (inp[n * C + c] - mean[n]) * rstd[n];
    pb += g;
    pg += g * norm;
  }
  partial[k * 2 * C + c] = pg;
  partial[k * 2 * C + C + c] = pb;
}

template <typename T>
void launch_layer_norm(int device, T* out, const T* x, const T* residual, const float* gamma, const float* beta,
                       int64_t N, int64_t C, float eps, T* sum_out, BranchDropout drop, float* mean, float* rstd) {
  const size_t shared = size_t(C) * sizeof(float);
  check(shared <= 48 * 1024,
        "layer_norm on CUDA: rows of " + std::to_string(C) + " floats exceed 48 KiB of shared memory");
  if (N == 0) return;
  layer_norm_kernel<T><<<unsigned(N), 256, shared, cuda::stream(device)>>>(out, x, residual, gamma, beta, C, eps,
                                                                           sum_out, drop, mean, rstd);
  cuda::check_launch("layer_norm_kernel");
}

}  // namespace

void layer_norm_forward_cuda(int device, float* out, const float* x, const float* residual, const float* gamma,
                             const float* beta, int64_t N, int64_t C, float eps, float* mean, float* rstd) {
  launch_layer_norm(device, out, x, residual, gamma, beta, N, C, eps, static_cast<float*>(nullptr), BranchDropout{},
                    mean, rstd);
}

void pre_layer_norm_forward_cuda(int device, float* out, float* h, const float* delta, const float* gamma,
                                 const float* beta, int64_t N, int64_t C, float eps, float* mean, float* rstd) {
  launch_layer_norm(device, out, h, delta, gamma, beta, N, C, eps, delta ? h : nullptr, BranchDropout{}, mean, rstd);
}

void layer_norm_forward_cuda(int device, DType dtype, void* out, const void* x, const void* residual,
                             const float* gamma, const float* beta, int64_t N, int64_t C, float eps) {
  cuda::dispatch_activation(dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_layer_norm(device, static_cast<T*>(out), static_cast<const T*>(x), static_cast<const T*>(residual), gamma,
                      beta, N, C, eps, static_cast<T*>(nullptr), BranchDropout{}, nullptr, nullptr);
  });
}

void pre_layer_norm_forward_cuda(int device, DType dtype, void* out, void* h, const void* delta, const float* gamma,
                                 const float* beta, int64_t N, int64_t C, float eps) {
  cuda::dispatch_activation(dtype, "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* sum = static_cast<T*>(h);
    launch_layer_norm(device, static_cast<T*>(out), sum, static_cast<const T*>(delta), gamma, beta, N, C, eps,
                      delta ? sum : nullptr, BranchDropout{}, nullptr, nullptr);
  });
}

void dropout_add_layer_norm_forward_cuda(int device, float* sum, float* out, const float* branch, const float* x,
                                         const float* gamma, const float* beta, int64_t N, int64_t C, float eps,
                                         float dropout_p, uint64_t dropout_key, float* mean, float* rstd) {
  BranchDropout drop;
  if (dropout_p > 0.f) {  // p = 0: the branch added as is, as dropout_apply copies it
    drop.on = true;
    drop.key = dropout_key;
    drop.threshold = dropout_threshold(dropout_p);
    drop.scale = 1.0f / (1.0f - dropout_p);
  }
  launch_layer_norm(device, out, x, branch, gamma, beta, N, C, eps, sum, drop, mean, rstd);
}

void layer_norm_backward_cuda(int device, float* dinp, float* dgamma, float* dbeta, const float* dout, const float* inp,
                              const float* gamma, const float* mean, const float* rstd, int64_t N, int64_t C) {
  if (N == 0 || C == 0) return;
  if (dgamma) {  // the parameters' sums first: they read dout, which dinp may be
    const Tensor partial = norm_grad_partials(device, N, 2 * C);
    const dim3 grid(unsigned((C + kNormGradThreads - 1) / kNormGradThreads), unsigned(norm_grad_chunks(N)));
    layer_norm_param_partials<<<grid, kNormGradThreads, 0, cuda::stream(device)>>>(partial.data<float>(), dout, inp,
                                                                                   mean, rstd, N, C);
    cuda::check_launch("layer_norm_param_partials");
    const int64_t chunks = norm_grad_chunks(N);
    launch_add_norm_grad_partials(device, dgamma, partial.data<float>(), chunks, 2 * C, C);
    if (dbeta) launch_add_norm_grad_partials(device, dbeta, partial.data<float>() + C, chunks, 2 * C, C);
  }
  layer_norm_backward_kernel<<<unsigned(N), 256, 0, cuda::stream(device)>>>(dinp, dout, inp, gamma, mean, rstd, C);
  cuda::check_launch("layer_norm_backward_kernel");
}

}  // namespace tach::ops
