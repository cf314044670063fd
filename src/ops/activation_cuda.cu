// ReLU and tanh on the GPU (forwards in f32, bf16 or f16): BERT's pooler tanh at inference (ReLU there is a cuBLASLt epilogue),
// and both as training ops, whose backwards read the saved output y.
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/activation.h"

namespace tach::ops {
namespace {

// relu needs no arithmetic: a value or zero, exact in any dtype.
template <typename T>
__global__ void relu_kernel(T* y, const T* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = cuda::to_float(x[i]);
    y[i] = cuda::from_float<T>(v > 0.f ? v : 0.f);
  }
}

// dx += dy * (y > 0)
__global__ void relu_backward_kernel(float* dx, const float* y, const float* dy, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] += y[i] > 0.f ? dy[i] : 0.f;
}

template <typename T>
__global__ void tanh_kernel(T* y, const T* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = cuda::from_float<T>(tanhf(cuda::to_float(x[i])));
}

// dx += dy * (1 - y²)
__global__ void tanh_backward_kernel(float* dx, const float* y, const float* dy, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] += dy[i] * (1.f - y[i] * y[i]);
}

}  // namespace

void relu_forward_cuda(int device, DType dtype, void* y, const void* x, int64_t n) {
  if (n == 0) return;
  cuda::dispatch_activation(dtype, "relu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    relu_kernel<T>
        <<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(static_cast<T*>(y), static_cast<const T*>(x), n);
  });
  cuda::check_launch("relu_kernel");
}

void tanh_forward_cuda(int device, DType dtype, void* y, const void* x, int64_t n) {
  if (n == 0) return;
  cuda::dispatch_activation(dtype, "tanh", [&](auto tag) {
    using T = typename decltype(tag)::type;
    tanh_kernel<T>
        <<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(static_cast<T*>(y), static_cast<const T*>(x), n);
  });
  cuda::check_launch("tanh_kernel");
}

void relu_forward_cuda(int device, float* y, const float* x, int64_t n) {
  relu_forward_cuda(device, DType::f32, y, x, n);
}

void relu_backward_cuda(int device, float* dx, const float* y, const float* dy, int64_t n) {
  if (n == 0) return;
  relu_backward_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(dx, y, dy, n);
  cuda::check_launch("relu_backward_kernel");
}

void tanh_forward_cuda(int device, float* y, const float* x, int64_t n) {
  tanh_forward_cuda(device, DType::f32, y, x, n);
}

void tanh_backward_cuda(int device, float* dx, const float* y, const float* dy, int64_t n) {
  if (n == 0) return;
  tanh_backward_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(dx, y, dy, n);
  cuda::check_launch("tanh_backward_kernel");
}

}  // namespace tach::ops
