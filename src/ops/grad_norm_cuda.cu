// The gradient norm and clipping on the GPU. The norm is a two-stage sum with a fixed order: one
// block per 64K-element chunk (the CPU's chunks) sums its squares in double into a partial, then
// one block adds the partials; no atomics, so two runs give the same bits.
#include <string>

#include "cuda/cuda_error.h"
#include "cuda/fixed_order_sum.cuh"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/grad_norm.h"
#include "tach/error.h"

namespace tach::ops {
namespace {

constexpr int kThreads = 256;

__global__ void chunk_squares_kernel(const float* g, int64_t n, double* partials) {
  __shared__ double scratch[32];
  const int64_t begin = int64_t(blockIdx.x) * kGradNormChunk;
  const int64_t end = begin + kGradNormChunk < n ? begin + kGradNormChunk : n;
  double s = 0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) s += double(g[i]) * double(g[i]);
  s = cuda::block_sum_f64(s, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// Block k: the squares of chunk k's gradient (at most 64K elements), summed as chunk_squares_kernel does.
__global__ void chunk_records_squares_kernel(const AdamWTensors::DeviceChunk* chunks, double* partials) {
  __shared__ double scratch[32];
  const AdamWTensors::DeviceChunk c = chunks[blockIdx.x];
  double s = 0;
  for (int64_t i = threadIdx.x; i < c.n; i += blockDim.x) s += double(c.grad[i]) * double(c.grad[i]);
  s = cuda::block_sum_f64(s, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void norm_finish_kernel(const double* partials, int64_t count, double* norm) {
  __shared__ double scratch[32];
  double s = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = cuda::block_sum_f64(s, scratch);
  if (threadIdx.x == 0) norm[0] = sqrt(s);
}

__global__ void scale_kernel(float* g, int64_t n, float coef) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    g[i] *= coef;
}

__global__ void clip_by_norm_kernel(float* g, int64_t n, const double* norm, double max_norm) {
  const float coef = clip_coefficient(norm[0], max_norm);
  if (coef >= 1.0f) return;  // within the limit: nothing moves, as on the CPU
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    g[i] *= coef;
}

}  // namespace

void grad_norm_partials_cuda(int device, const float* g, int64_t n, double* partials) {
  const int64_t chunks = (n + kGradNormChunk - 1) / kGradNormChunk;
  if (chunks == 0) return;
  check(chunks <= 0x7fffffff, "grad_norm on CUDA: a gradient of " + std::to_string(n) + " elements is too large");
  chunk_squares_kernel<<<unsigned(chunks), kThreads, 0, cuda::stream(device)>>>(g, n, partials);
  cuda::check_launch("chunk_squares_kernel");
}

void grad_norm_chunks_cuda(int device, const AdamWTensors::DeviceChunk* chunks, int64_t count, double* partials) {
  if (count == 0) return;
  check(count <= 0x7fffffff, "grad_norm on CUDA: " + std::to_string(count) + " gradient chunks are too many");
  chunk_records_squares_kernel<<<unsigned(count), kThreads, 0, cuda::stream(device)>>>(chunks, partials);
  cuda::check_launch("chunk_records_squares_kernel");
}

void grad_norm_finish_cuda(int device, const double* partials, int64_t count, double* norm) {
  norm_finish_kernel<<<1, 1024, 0, cuda::stream(device)>>>(partials, count, norm);
  cuda::check_launch("norm_finish_kernel");
}

void scale_cuda(int device, float* g, int64_t n, float coef) {
  if (n == 0) return;
  scale_kernel<<<cuda::grid_for(n, kThreads), kThreads, 0, cuda::stream(device)>>>(g, n, coef);
  cuda::check_launch("scale_kernel");
}

void clip_by_norm_cuda(int device, float* g, int64_t n, const double* norm, double max_norm) {
  if (n == 0) return;
  clip_by_norm_kernel<<<cuda::grid_for(n, kThreads), kThreads, 0, cuda::stream(device)>>>(g, n, norm, max_norm);
  cuda::check_launch("clip_by_norm_kernel");
}

}  // namespace tach::ops
