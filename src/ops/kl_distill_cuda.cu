// Distillation's KL loss on the GPU: one block per group (a distribution over `classes`), the CPU's
// arithmetic in double. The forward writes each group's term, then one block sums the terms in
// group order: the same loss bits every run. The backward accumulates (+=) into dstudent.
#include <cstdint>

#include "cuda/cuda_error.h"
#include "cuda/fixed_order_sum.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/cross_entropy.h"
#include "ops/kl_distill.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 256;

// One side's log-softmax of x / T over the group: its shift (the max) and the log of its sum.
struct GroupLogSoftmax {
  double shift, log_sum;
};

__device__ GroupLogSoftmax group_log_softmax(const float* x, int64_t classes, int64_t inner, double inv_t,
                                             float* max_scratch, double* sum_scratch) {
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) mx = fmaxf(mx, x[c * inner]);
  // x / T is monotonic in x (T > 0): the max of the scaled values is the scaled max.
  const double shift = double(cuda::block_max(mx, max_scratch)) * inv_t;
  double sum = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) sum += exp(double(x[c * inner]) * inv_t - shift);
  return {shift, log(cuda::block_sum_f64(sum, sum_scratch))};
}

__device__ int64_t group_base(int64_t i, int64_t classes, int64_t inner) {
  return (i / inner) * classes * inner + i % inner;
}

// terms[i]: group i's KL (0 when its label is -100). One block per group.
__global__ void kl_terms_kernel(const float* student, const float* teacher, const int32_t* labels, int64_t classes,
                                int64_t inner, double inv_t, double* terms) {
  __shared__ float max_scratch[32];
  __shared__ double sum_scratch[32];
  const int64_t i = blockIdx.x;
  if (labels && labels[i] == kIgnoreIndex) {
    if (threadIdx.x == 0) terms[i] = 0;
    return;
  }
  const int64_t base = group_base(i, classes, inner);
  const float* s = student + base;
  const float* t = teacher + base;
  const GroupLogSoftmax ls = group_log_softmax(s, classes, inner, inv_t, max_scratch, sum_scratch);
  const GroupLogSoftmax lt = group_log_softmax(t, classes, inner, inv_t, max_scratch, sum_scratch);
  double kl = 0;
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    const double log_p = double(t[c * inner]) * inv_t - lt.shift - lt.log_sum;
    const double log_q = double(s[c * inner]) * inv_t - ls.shift - ls.log_sum;
    kl += exp(log_p) * (log_p - log_q);
  }
  kl = cuda::block_sum_f64(kl, sum_scratch);
  if (threadIdx.x == 0) terms[i] = kl;
}

// loss[0] = T² Σ terms / counted (0 when no group counts), summed in a fixed order.
__global__ void kl_finish_kernel(const double* terms, const int32_t* labels, int64_t groups, double t_squared,
                                 double* loss) {
  __shared__ double scratch[32];
  double s = 0, n = 0;
  for (int64_t i = threadIdx.x; i < groups; i += blockDim.x) {
    s += terms[i];
    n += (!labels || labels[i] != kIgnoreIndex) ? 1.0 : 0.0;
  }
  s = cuda::block_sum_f64(s, scratch);
  n = cuda::block_sum_f64(n, scratch);
  if (threadIdx.x == 0) loss[0] = n > 0 ? t_squared * s / n : 0.0;
}

// dstudent += k (q - p), k = scale T / counted. One block per group; counted is read from labels
// by every block (a few thousand groups at most).
__global__ void kl_backward_kernel(float* dstudent, const float* student, const float* teacher, const int32_t* labels,
                                   int64_t groups, int64_t classes, int64_t inner, double inv_t, double scale_t) {
  __shared__ float max_scratch[32];
  __shared__ double sum_scratch[32];
  const int64_t i = blockIdx.x;
  if (labels && labels[i] == kIgnoreIndex) return;
  double n = 0;
  for (int64_t j = threadIdx.x; j < groups; j += blockDim.x) n += (!labels || labels[j] != kIgnoreIndex) ? 1.0 : 0.0;
  n = cuda::block_sum_f64(n, sum_scratch);
  const double k = scale_t / n;
  const int64_t base = group_base(i, classes, inner);
  const float* s = student + base;
  const float* t = teacher + base;
  const GroupLogSoftmax ls = group_log_softmax(s, classes, inner, inv_t, max_scratch, sum_scratch);
  const GroupLogSoftmax lt = group_log_softmax(t, classes, inner, inv_t, max_scratch, sum_scratch);
  for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
    const int64_t at = c * inner;
    const double q = exp(double(s[at]) * inv_t - ls.shift - ls.log_sum);
    const double p = exp(double(t[at]) * inv_t - lt.shift - lt.log_sum);
    dstudent[base + at] += float(k * (q - p));
  }
}

}  // namespace

void kl_distill_forward_cuda(int device, const float* student, const float* teacher, const int32_t* labels,
                             SoftmaxGroups g, float temperature, double* partials, double* loss) {
  cudaStream_t stream = cuda::stream(device);
  const int64_t groups = g.groups();
  const double inv_t = 1.0 / double(temperature);
  if (groups > 0) {
    kl_terms_kernel<<<unsigned(groups), kThreads, 0, stream>>>(student, teacher, labels, g.classes, g.inner, inv_t,
                                                               partials);
    cuda::check_launch("kl_terms_kernel");
  }
  kl_finish_kernel<<<1, 1024, 0, stream>>>(partials, labels, groups, double(temperature) * double(temperature), loss);
  cuda::check_launch("kl_finish_kernel");
}

void kl_distill_backward_cuda(int device, float* dstudent, const float* student, const float* teacher,
                              const int32_t* labels, SoftmaxGroups g, float temperature, float scale) {
  const int64_t groups = g.groups();
  if (groups == 0) return;
  kl_backward_kernel<<<unsigned(groups), kThreads, 0, cuda::stream(device)>>>(
      dstudent, student, teacher, labels, groups, g.classes, g.inner, 1.0 / double(temperature),
      double(scale) * double(temperature));
  cuda::check_launch("kl_backward_kernel");
}

}  // namespace tach::ops
