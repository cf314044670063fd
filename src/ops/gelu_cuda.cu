// GELU (erf form) on the GPU: inference's activation after a cuBLASLt GEMM with its bias
// epilogue (in f32, bf16 or f16 activations) (cuBLASLt's own GELU epilogue is the tanh approximation), and training's forward,
// backward and fused bias-GELU, with the CPU kernels' arguments and accumulate rules.
#include "cuda/activation_math.cuh"
#include "cuda/column_sum.cuh"
#include "cuda/convert.cuh"
#include "cuda/cuda_error.h"
#include "cuda/kernel_support.cuh"
#include "cuda/stream.h"
#include "ops/gelu.h"

namespace tach::ops {
namespace {

template <typename T>
__global__ void gelu_kernel(T* out, const T* x, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = cuda::from_float<T>(cuda::gelu_erf(cuda::to_float(x[i])));
}

// dx += dout * gelu'(x)
__global__ void gelu_backward_kernel(float* dx, const float* x, const float* dout, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dx[i] += dout[i] * cuda::gelu_erf_grad(x[i]);
}

// pre [M, N] += b [N] per row; act = gelu(pre)
__global__ void bias_gelu_kernel(float* pre, float* act, const float* b, int64_t M, int64_t N) {
  const int64_t total = M * N;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
    const float p = pre[e] + b[e % N];
    pre[e] = p;
    act[e] = cuda::gelu_erf(p);
  }
}

// dpre = dact * gelu'(pre), written (not accumulated)
__global__ void gelu_grad_kernel(float* dpre, const float* pre, const float* dact, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dpre[i] = dact[i] * cuda::gelu_erf_grad(pre[i]);
}

}  // namespace

void gelu_forward_cuda(int device, float* out, const float* x, int64_t n) {
  gelu_forward_cuda(device, DType::f32, out, x, n);
}

void gelu_forward_cuda(int device, DType dtype, void* out, const void* x, int64_t n) {
  if (n == 0) return;
  cuda::dispatch_activation(dtype, "gelu", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gelu_kernel<T>
        <<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(static_cast<T*>(out), static_cast<const T*>(x), n);
  });
  cuda::check_launch("gelu_kernel");
}

void gelu_backward_cuda(int device, float* dx, const float* x, const float* dout, int64_t n) {
  if (n == 0) return;
  gelu_backward_kernel<<<cuda::grid_for(n, 256), 256, 0, cuda::stream(device)>>>(dx, x, dout, n);
  cuda::check_launch("gelu_backward_kernel");
}

void bias_gelu_forward_cuda(int device, float* pre, float* act, const float* b, int64_t M, int64_t N) {
  if (M * N == 0) return;
  bias_gelu_kernel<<<cuda::grid_for(M * N, 256), 256, 0, cuda::stream(device)>>>(pre, act, b, M, N);
  cuda::check_launch("bias_gelu_kernel");
}

void bias_gelu_backward_cuda(int device, float* dpre, float* db, const float* pre, const float* dact, int64_t M,
                             int64_t N) {
  if (M * N == 0) return;
  cudaStream_t s = cuda::stream(device);
  gelu_grad_kernel<<<cuda::grid_for(M * N, 256), 256, 0, s>>>(dpre, pre, dact, M * N);
  cuda::check_launch("gelu_grad_kernel");
  if (db) cuda::column_sum_add(s, db, dpre, M, N);  // undefined db: a frozen bias
}

}  // namespace tach::ops
