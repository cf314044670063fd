// The residual add (contiguous, or over strided rows) and scaling in place on the GPU (Gemma's
// embedding scale), in f32, bf16 or f16 activations: each element loaded, computed in f32 and
// rounded once. Contiguous operands go 8 elements per access where their pointers allow.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/add.h"

namespace tach::ops {
namespace {

constexpr int kPack = 8;

template <typename T>
__global__ void scale_kernel(T* x, float s, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = cuda::from_float<T>(cuda::to_float(x[i]) * s);
}

// y [n] += x [n]; packed: the first n / 8 * 8 elements in packs of 8 (both pointers aligned).
template <typename T>
__global__ void add_kernel(T* y, const T* x, int64_t n, bool packed) {
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, stride = int64_t(gridDim.x) * blockDim.x;
  int64_t scalar_from = 0;
  if (packed) {
    using P = cuda::Pack<T, kPack>;
    const int64_t packs = n / kPack;
    for (int64_t p = first; p < packs; p += stride) {
      P a = reinterpret_cast<const P*>(y)[p];
      const P b = reinterpret_cast<const P*>(x)[p];
#pragma unroll
      for (int k = 0; k < kPack; ++k) a.v[k] = cuda::from_float<T>(cuda::to_float(a.v[k]) + cuda::to_float(b.v[k]));
      reinterpret_cast<P*>(y)[p] = a;
    }
    scalar_from = packs * kPack;
  }
  for (int64_t i = scalar_from + first; i < n; i += stride)
    y[i] = cuda::from_float<T>(cuda::to_float(y[i]) + cuda::to_float(x[i]));
}

// y [rows, cols] (row stride ldy) += x [rows, cols] (row stride ldx)
template <typename T>
__global__ void add_rows_kernel(T* y, int64_t ldy, const T* x, int64_t ldx, int64_t rows, int64_t cols) {
  const int64_t total = rows * cols;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = e / cols, c = e % cols;
    y[r * ldy + c] = cuda::from_float<T>(cuda::to_float(y[r * ldy + c]) + cuda::to_float(x[r * ldx + c]));
  }
}

}  // namespace

void add_rows_cuda(int device, DType dtype, void* y, int64_t ldy, const void* x, int64_t ldx, int64_t rows,
                   int64_t cols) {
  if (rows * cols == 0) return;
  cudaStream_t s = cuda::stream(device);
  cuda::dispatch_activation(dtype, "add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (rows == 1 || (ldy == cols && ldx == cols)) {  // one contiguous run
      const int64_t n = rows * cols;
      const bool packed = cuda::pack_aligned(y, sizeof(T) * kPack) && cuda::pack_aligned(x, sizeof(T) * kPack);
      add_kernel<T><<<cuda::grid_for(packed ? n / kPack + 1 : n, 256), 256, 0, s>>>(
          static_cast<T*>(y), static_cast<const T*>(x), n, packed);
      return;
    }
    add_rows_kernel<T><<<cuda::grid_for(rows * cols, 256), 256, 0, s>>>(static_cast<T*>(y), ldy,
                                                                        static_cast<const T*>(x), ldx, rows, cols);
  });
  cuda::check_launch("add_kernel");
}

void add_rows_cuda(int device, float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows, int64_t cols) {
  add_rows_cuda(device, DType::f32, y, ldy, x, ldx, rows, cols);
}

void add_inplace_cuda(int device, float* y, const float* x, int64_t n) {
  add_rows_cuda(device, DType::f32, y, n, x, n, 1, n);
}

void scale_inplace_cuda(int device, DType dtype, void* x, float s, int64_t n) {
  if (n == 0) return;
  cuda::dispatch_activation(dtype, "scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    scale_kernel<T><<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(static_cast<T*>(x), s, n);
  });
  cuda::check_launch("scale_kernel");
}

void scale_inplace_cuda(int device, float* x, float s, int64_t n) { scale_inplace_cuda(device, DType::f32, x, s, n); }

}  // namespace tach::ops
