// The GEMM the training kernels call on a GPU, as cpu::train_gemm on the CPU: f32 operands in
// device memory, f32 out, at the run's training precision (cpu::train_precision()). f32 multiplies
// in f32 (no TF32: the numbers of the CPU's f32 GEMM up to summation order); bf16 rounds both
// operands to bf16 (nearest even, as the CPU rounds them) and cuBLASLt multiplies them with f32
// accumulation, as torch.autocast runs a linear.
#pragma once

#include <cstdint>

namespace tach::cuda {

// Row-major, as cpu::train_gemm: C [M, N] = alpha · op(A) · op(B) + beta · C (+ bias [N] on every
// row when bias is not null). op(A): A [M, K] (lda), or A stored [K, M] when trans_a; op(B):
// B [K, N] (ldb), or B stored [N, K] when trans_b. Nothing runs when M or N is 0; K must be
// positive (an empty product is an error here, not beta · C). On tach's stream of `device`; bf16 copies of the operands are stream-ordered
// temporaries.
void train_gemm(int device, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                const float* bias = nullptr);

}  // namespace tach::cuda
