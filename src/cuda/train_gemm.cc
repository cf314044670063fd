#include "cuda/train_gemm.h"

#include "cpu/train_gemm.h"
#include "cuda/convert.h"
#include "cuda/cublaslt.h"
#include "tach/tensor.h"

namespace tach::cuda {

void train_gemm(int device, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, const float* bias) {
  if (M == 0 || N == 0) return;
  GemmArgs g;
  g.trans_a = trans_a, g.trans_b = trans_b;
  g.M = M, g.N = N, g.K = K;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc;
  g.alpha = alpha, g.beta = beta;
  g.bias = bias;
  if (cpu::train_precision() == cpu::TrainPrecision::f32) {
    g.precision = GemmPrecision::f32;
    gemm(device, C, A, B, g);
    return;
  }
  // The stored shapes: A is [M, K] ([K, M] transposed), B is [K, N] ([N, K] transposed); their
  // bf16 copies are contiguous. Freed in stream order after the GEMM is queued.
  const int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  const Device where = Device::cuda(device);
  Tensor a16 = Tensor::empty({a_rows, a_cols}, DType::bf16, where, MemoryCategory::workspace);
  Tensor b16 = Tensor::empty({b_rows, b_cols}, DType::bf16, where, MemoryCategory::workspace);
  convert_from_f32(device, a16.raw(), DType::bf16, A, a_rows, a_cols, lda);
  convert_from_f32(device, b16.raw(), DType::bf16, B, b_rows, b_cols, ldb);
  g.precision = GemmPrecision::bf16;
  g.lda = a_cols, g.ldb = b_cols;
  gemm(device, C, a16.raw(), b16.raw(), g);
}

}  // namespace tach::cuda
