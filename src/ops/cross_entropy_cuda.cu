// Cross-entropy on the GPU. Forward: one block per row (max, exp, double sum, scale: the CPU's
// steps), each row's loss into a buffer, then one block that adds the labelled rows' losses in a
// fixed order and finds the first bad label; no atomics, so the loss has the same bits every run.
// Backward: the labelled rows counted on the device (no host round trip), then one block per row.
#include <cmath>
#include <cstdint>
#include <string>

#include "cuda/cuda_error.h"
#include "cuda/fixed_order_sum.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/cross_entropy.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 256;

// probs: [R, L] written with each row's softmax; row_loss: [R], -log p(label) where the label is
// in [0, L) (the finishing kernel reads only those).
__global__ void ce_rows_kernel(float* probs, const float* logits, int64_t row_stride, int64_t stride,
                               const int32_t* labels, int64_t L, double* row_loss) {
  __shared__ float fscratch[32];
  __shared__ double dscratch[32];
  const int64_t r = blockIdx.x;
  const float* x = logits + r * row_stride;
  float* p = probs + r * L;
  float mx = -INFINITY;
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) mx = fmaxf(mx, x[i * stride]);
  mx = cuda::block_max(mx, fscratch);
  double sum = 0;
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) {
    const float e = expf(x[i * stride] - mx);
    p[i] = e;
    sum += double(e);
  }
  sum = cuda::block_sum_f64(sum, dscratch);
  const float inv = float(1.0 / sum);
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) p[i] *= inv;  // the elements this thread wrote
  if (threadIdx.x == 0) {
    const int32_t y = labels[r];
    row_loss[r] = y >= 0 && y < L ? -(double(x[y * stride] - mx) - log(sum)) : 0.0;
  }
}

// loss: the kLossSlots (mean, first bad row or -1, its label, L). One block.
__global__ void ce_finish_kernel(const double* row_loss, const int32_t* labels, int64_t R, int64_t L, double* loss,
                                 double weight, bool accumulate) {
  __shared__ double dscratch[32];
  __shared__ int64_t iscratch[32];
  double total = 0, counted = 0;
  int64_t bad = INT64_MAX;
  for (int64_t r = threadIdx.x; r < R; r += blockDim.x) {
    const int32_t y = labels[r];
    if (y == kIgnoreIndex) continue;
    if (y < 0 || y >= L) {
      bad = r < bad ? r : bad;
      continue;
    }
    total += row_loss[r];
    counted += 1;
  }
  total = cuda::block_sum_f64(total, dscratch);
  counted = cuda::block_sum_f64(counted, dscratch);
  bad = cuda::block_min_i64(bad, iscratch);
  if (threadIdx.x != 0) return;
  const double mean = counted > 0 ? total / counted : 0.0;
  loss[0] = accumulate ? loss[0] + weight * mean : weight * mean;
  if (accumulate && loss[1] >= 0) return;  // the first half's bad label is the one to name
  loss[1] = bad == INT64_MAX ? -1.0 : double(bad);
  loss[2] = bad == INT64_MAX ? 0.0 : double(labels[bad]);
  loss[3] = double(L);
}

// k: [1] = scale / (rows not ignored), as the CPU's float division (0 when none is counted: no
// row is then touched anyway).
__global__ void ce_scale_kernel(const int32_t* labels, int64_t R, float scale, float* k) {
  __shared__ double scratch[32];
  double counted = 0;
  for (int64_t r = threadIdx.x; r < R; r += blockDim.x) counted += labels[r] != kIgnoreIndex ? 1.0 : 0.0;
  counted = cuda::block_sum_f64(counted, scratch);
  if (threadIdx.x == 0) k[0] = counted > 0 ? scale / float(counted) : 0.0f;
}

__global__ void ce_backward_rows_kernel(float* dlogits, int64_t row_stride, int64_t stride, const float* probs,
                                        const int32_t* labels, int64_t L, const float* k) {
  const int64_t r = blockIdx.x;
  const int32_t y = labels[r];
  if (y == kIgnoreIndex) return;
  const float kk = k[0];
  float* d = dlogits + r * row_stride;
  const float* p = probs + r * L;
  for (int64_t i = threadIdx.x; i < L; i += blockDim.x) d[i * stride] += kk * (p[i] - (i == y ? 1.0f : 0.0f));
}

void check_rows(int64_t R) {
  check(R <= 0x7fffffff, "cross_entropy on CUDA: " + std::to_string(R) + " rows exceed one launch's blocks");
}

}  // namespace

void cross_entropy_forward_cuda(int device, float* probs, const float* logits, int64_t row_stride, int64_t stride,
                                const int32_t* labels, int64_t R, int64_t L, double* row_loss, double* loss,
                                double weight, bool accumulate) {
  check_rows(R);
  cudaStream_t s = cuda::stream(device);
  if (R > 0 && L > 0) {
    ce_rows_kernel<<<unsigned(R), kThreads, 0, s>>>(probs, logits, row_stride, stride, labels, L, row_loss);
    cuda::check_launch("ce_rows_kernel");
  }
  ce_finish_kernel<<<1, 1024, 0, s>>>(row_loss, labels, R, L, loss, weight, accumulate);
  cuda::check_launch("ce_finish_kernel");
}

void cross_entropy_backward_cuda(int device, float* dlogits, int64_t row_stride, int64_t stride, const float* probs,
                                 const int32_t* labels, int64_t R, int64_t L, float scale, float* k) {
  check_rows(R);
  if (R == 0 || L == 0) return;
  cudaStream_t s = cuda::stream(device);
  ce_scale_kernel<<<1, 1024, 0, s>>>(labels, R, scale, k);
  cuda::check_launch("ce_scale_kernel");
  ce_backward_rows_kernel<<<unsigned(R), kThreads, 0, s>>>(dlogits, row_stride, stride, probs, labels, L, k);
  cuda::check_launch("ce_backward_rows_kernel");
}

}  // namespace tach::ops
