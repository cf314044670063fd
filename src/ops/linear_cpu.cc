// The training linear's kernels: GEMMs on the plain master weight through cpu::train_gemm (f32, or
// bf16 inputs with f32 accumulation in a mixed-precision run).
#include <cstring>

#include "core/parallel.h"
#include "cpu/train_gemm.h"
#include "ops/linear.h"

namespace tach::ops {

void linear_forward_cpu(float* y, const float* x, const float* W, const float* b, int64_t M, int64_t N, int64_t K) {
  // Rows start as the bias, then the GEMM accumulates onto them (beta = 1): one pass over y.
  if (b) {
    core::parallel_for(M, 64, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) std::memcpy(y + m * N, b, sizeof(float) * size_t(N));
    });
  }
  cpu::train_gemm(false, true, M, N, K, 1.f, x, K, W, K, b ? 1.f : 0.f, y, N);
}

void linear_backward_cpu(float* dx, float* dW, float* db, const float* dy, const float* x, const float* W, int64_t M,
                         int64_t N, int64_t K) {
  // dW [N, K] += dyᵀ [N, M] · x [M, K]
  if (dW) cpu::train_gemm(true, false, N, K, M, 1.f, dy, N, x, K, 1.f, dW, K);  // null: a frozen weight
  // dx [M, K] += dy [M, N] · W [N, K]
  if (dx) cpu::train_gemm(false, false, M, K, N, 1.f, dy, N, W, K, 1.f, dx, K);
  if (db) {
    // Column sums, split by columns so that threads never share an output.
    core::parallel_for(N, 256, [&](int64_t n0, int64_t n1) {
      for (int64_t m = 0; m < M; ++m) {
        const float* row = dy + m * N;
        for (int64_t n = n0; n < n1; ++n) db[n] += row[n];
      }
    });
  }
}

}  // namespace tach::ops
