// GEMM on the CPU, bound to well-kept libraries: oneDNN (the default, chosen by measurement,
// see docs/perf.md) and OpenBLAS (kept for comparison; TACH_GEMM=openblas selects it).
// All matrices are row-major.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tach::cpu {

enum class GemmBackend { onednn, openblas };
std::string_view gemm_backend_name(GemmBackend backend);
// oneDNN unless the environment variable TACH_GEMM says "openblas".
GemmBackend default_gemm_backend();
std::string onednn_version();

// C[M, N] = alpha * op(A)[M, K] · op(B)[K, N] + beta * C.
// A: [M, K] (or [K, M] when trans_a)  B: [K, N] (or [N, K] when trans_b, the nn.Linear layout)
void sgemm(GemmBackend backend, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// As sgemm with bf16 inputs (raw uint16 bits) and f32 accumulation and output.
// Whether oneDNN has a bf16 matmul for this CPU (oneDNN 2.x needs AVX-512 for it: an AVX2-only
// CPU has none). Asked once, by creating a small primitive.
bool onednn_bf16_supported();
// Throws a clear error naming `what` when bf16 compute cannot run on this CPU.
void require_bf16_compute(const std::string& what);

void gemm_bf16(GemmBackend backend, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc);

// OpenBLAS's cblas_sbgemm, or null when the loaded OpenBLAS was built without bfloat16.
using SbgemmFn = void (*)(int order, int trans_a, int trans_b, int M, int N, int K, float alpha, const uint16_t* A,
                          int lda, const uint16_t* B, int ldb, float beta, float* C, int ldc);
SbgemmFn openblas_sbgemm();

}  // namespace tach::cpu
