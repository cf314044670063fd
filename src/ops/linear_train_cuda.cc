// The CUDA side of the training linear: cuBLASLt GEMMs at the run's training precision
// (cuda/train_gemm.h) with the CPU kernels' accumulate rules (ops/linear_cpu.cc), the bias in the
// forward GEMM's epilogue, db a deterministic column sum, and QLoRA's NF4 base dequantized on the
// device (ops/linear_train_cuda.cu) before its GEMM. Compiled only with the CUDA backend.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_error.h"
#include "cuda/stream.h"
#include "cuda/train_gemm.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::ops {

void linear_forward_train_cuda(int device, float* y, const float* x, const float* W, const float* b, int64_t M,
                               int64_t N, int64_t K) {
  // cuBLASLt's bias epilogue is sure to have kernels only for a bias on 16 bytes; a bias that is a
  // view into a larger buffer is copied first (stream-ordered: no host wait).
  Tensor aligned_bias;
  if (b && reinterpret_cast<uintptr_t>(b) % 16 != 0 && M > 0 && N > 0) {
    aligned_bias = Tensor::empty({N}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
    cuda::check(cudaMemcpyAsync(aligned_bias.raw(), b, size_t(N) * sizeof(float), cudaMemcpyDeviceToDevice,
                                cuda::stream(device)),
                "linear_forward_train: copying the bias");
    b = aligned_bias.data<float>();
  }
  // y [M, N] = x [M, K] · Wᵀ [K, N] + b
  cuda::train_gemm(device, false, true, M, N, K, 1.f, x, K, W, K, 0.f, y, N, b);
}

void linear_backward_cuda(int device, float* dx, float* dW, float* db, const float* dy, const float* x, const float* W,
                          int64_t M, int64_t N, int64_t K) {
  if (M == 0) return;  // no rows: every gradient gains nothing
  // dW [N, K] += dyᵀ [N, M] · x [M, K] (null: a frozen weight)
  if (dW) cuda::train_gemm(device, true, false, N, K, M, 1.f, dy, N, x, K, 1.f, dW, K);
  // dx [M, K] += dy [M, N] · W [N, K] (null: nothing upstream needs it)
  if (dx) cuda::train_gemm(device, false, false, M, K, N, 1.f, dy, N, W, K, 1.f, dx, K);
  if (db) linear_bias_grad_cuda(device, db, dy, M, N);
}

namespace {

// W dequantized into a stream-ordered f32 [N, K] temporary (freed in stream order after the GEMMs
// that read it are queued).
Tensor dequantized(int device, const cpu::Nf4Matrix& W, int64_t N, int64_t K) {
  check(W.rows == N && W.cols == K, "linear_nf4 on CUDA: the weight is not [N, K]");
  Tensor w = Tensor::empty({N, K}, DType::f32, Device::cuda(device), MemoryCategory::workspace);
  nf4_dequantize_cuda(device, w.data<float>(), W);
  return w;
}

}  // namespace

void nf4_linear_forward_cuda(int device, float* y, const float* x, const cpu::Nf4Matrix& W, const float* b, int64_t M,
                             int64_t N, int64_t K) {
  if (M == 0 || N == 0) return;
  const Tensor w = dequantized(device, W, N, K);
  linear_forward_train_cuda(device, y, x, w.data<float>(), b, M, N, K);
}

void nf4_linear_backward_dx_cuda(int device, float* dx, const float* dy, const cpu::Nf4Matrix& W, int64_t M, int64_t N,
                                 int64_t K) {
  if (M == 0 || N == 0) return;
  const Tensor w = dequantized(device, W, N, K);
  // dx [M, K] += dy [M, N] · W [N, K]
  cuda::train_gemm(device, false, false, M, K, N, 1.f, dy, N, w.data<float>(), K, 1.f, dx, K);
}

}  // namespace tach::ops
