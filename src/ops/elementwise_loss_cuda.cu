// MSE and BCE-with-logits on the GPU. The forwards are two-stage sums in double with a fixed order
// (a block count set by N alone, each block's partial, then one block over the partials): the same
// loss bits every run. The backwards are one element per thread, the CPU's arithmetic.
#include <cstdint>

#include "cuda/cuda_error.h"
#include "cuda/fixed_order_sum.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/elementwise_loss.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 256;

// The CPU forwards' terms, element i, in double.
struct SquaredError {
  __device__ double operator()(float p, float t) const {
    const double d = double(p - t);
    return d * d;
  }
};

struct BceWithLogits {
  __device__ double operator()(float logit, float target) const {
    const double x = logit, y = target;
    return fmax(x, 0.0) - x * y + log1p(exp(-fabs(x)));
  }
};

template <typename Term>
__global__ void partial_sums_kernel(const float* a, const float* b, int64_t N, double* partials, Term term) {
  __shared__ double scratch[32];
  double s = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < N; i += int64_t(gridDim.x) * blockDim.x)
    s += term(a[i], b[i]);
  s = cuda::block_sum_f64(s, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// loss[0] = Σ partials / N (0 for no element, as the CPU).
__global__ void mean_finish_kernel(const double* partials, int64_t count, int64_t N, double* loss) {
  __shared__ double scratch[32];
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = cuda::block_sum_f64(s, scratch);
  if (threadIdx.x == 0) loss[0] = N ? s / double(N) : 0.0;
}

__global__ void mse_backward_kernel(float* dpred, const float* pred, const float* target, int64_t N, float k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < N; i += int64_t(gridDim.x) * blockDim.x)
    dpred[i] += k * (pred[i] - target[i]);
}

__global__ void bce_backward_kernel(float* dlogits, const float* logits, const float* target, int64_t N, float k) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < N; i += int64_t(gridDim.x) * blockDim.x) {
    const float s = 1.0f / (1.0f + expf(-logits[i]));
    dlogits[i] += k * (s - target[i]);
  }
}

template <typename Term>
void mean_of(int device, const float* a, const float* b, int64_t N, double* partials, double* loss, Term term) {
  cudaStream_t s = cuda::stream(device);
  const int64_t count = N > 0 ? elementwise_loss_partials(N) : 0;
  if (count > 0) {
    partial_sums_kernel<<<unsigned(count), kThreads, 0, s>>>(a, b, N, partials, term);
    cuda::check_launch("partial_sums_kernel");
  }
  mean_finish_kernel<<<1, 1024, 0, s>>>(partials, count, N, loss);
  cuda::check_launch("mean_finish_kernel");
}

}  // namespace

int64_t elementwise_loss_partials(int64_t N) { return int64_t(cuda::fixed_partial_blocks(N, kThreads)); }

void mse_forward_cuda(int device, const float* pred, const float* target, int64_t N, double* partials, double* loss) {
  mean_of(device, pred, target, N, partials, loss, SquaredError{});
}

void bce_with_logits_forward_cuda(int device, const float* logits, const float* target, int64_t N, double* partials,
                                  double* loss) {
  mean_of(device, logits, target, N, partials, loss, BceWithLogits{});
}

void mse_backward_cuda(int device, float* dpred, const float* pred, const float* target, int64_t N, float scale) {
  if (N == 0) return;
  const float k = 2.0f * scale / float(N);
  mse_backward_kernel<<<cuda::grid_for(N, kThreads), kThreads, 0, cuda::stream(device)>>>(dpred, pred, target, N, k);
  cuda::check_launch("mse_backward_kernel");
}

void bce_with_logits_backward_cuda(int device, float* dlogits, const float* logits, const float* target, int64_t N,
                                   float scale) {
  if (N == 0) return;
  const float k = scale / float(N);
  bce_backward_kernel<<<cuda::grid_for(N, kThreads), kThreads, 0, cuda::stream(device)>>>(dlogits, logits, target, N,
                                                                                          k);
  cuda::check_launch("bce_backward_kernel");
}

}  // namespace tach::ops
