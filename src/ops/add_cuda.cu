// The residual add (contiguous, or over strided rows) and scaling in place on the GPU (Gemma's
// embedding scale).
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/add.h"

namespace tach::ops {
namespace {

__global__ void scale_kernel(float* x, float s, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

// y [rows, cols] (row stride ldy) += x [rows, cols] (row stride ldx)
__global__ void add_rows_kernel(float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / cols, c = e % cols;
    y[r * ldy + c] += x[r * ldx + c];
  }
}

}  // namespace

void add_rows_cuda(int device, float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows, int64_t cols) {
  if (rows * cols == 0) return;
  add_rows_kernel<<<cuda::grid_for(rows * cols, 256), 256, 0, cuda::stream(device)>>>(y, ldy, x, ldx, rows, cols);
  cuda::check_launch("add_rows_kernel");
}

void add_inplace_cuda(int device, float* y, const float* x, int64_t n) {
  if (n == 0) return;
  add_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(y, x, n);
  cuda::check_launch("add_kernel");
}

void scale_inplace_cuda(int device, float* x, float s, int64_t n) {
  if (n == 0) return;
  scale_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(x, s, n);
  cuda::check_launch("scale_kernel");
}

}  // namespace tach::ops
