#include "cpu/nf4_gemm.h"

#include <algorithm>
#include <cstring>

#include "core/parallel.h"
#include "cpu/train_gemm.h"
#include "tach/error.h"

namespace tach::cpu {

namespace {

// tile [rows, K] = W's rows [r0, r0 + rows), dequantized by all threads.
void dequantize_tile(const Nf4Matrix& W, int64_t r0, int64_t rows, float* tile) {
  core::parallel_for(rows, 8, [&](int64_t a, int64_t b) { W.dequantize_rows(r0 + a, r0 + b, tile + a * W.cols); });
}

}  // namespace

int64_t nf4_tile_rows(int64_t N, int64_t K) {
  const int64_t rows = std::max<int64_t>(16, ((int64_t(1) << 20) / std::max<int64_t>(K, 1)) / 16 * 16);
  return std::min(rows, N);
}

void nf4_linear_forward(float* y, const float* x, const Nf4Matrix& W, const float* b, int64_t M, int64_t N, int64_t K) {
  check(W.rows == N && W.cols == K, "nf4_linear_forward: the weight is not [N, K]");
  if (b) {
    core::parallel_for(M, 64, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m) std::memcpy(y + m * N, b, sizeof(float) * size_t(N));
    });
  }
  const int64_t T = nf4_tile_rows(N, K);
  Tensor tile = Tensor::empty({T, K}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  for (int64_t n0 = 0; n0 < N; n0 += T) {
    const int64_t rows = std::min(T, N - n0);
    dequantize_tile(W, n0, rows, tile.data<float>());
    // y[:, n0:n0+rows] (+)= x · tileᵀ
    train_gemm(false, true, M, rows, K, 1.f, x, K, tile.data<float>(), K, b ? 1.f : 0.f, y + n0, N);
  }
}

void nf4_linear_backward_dx(float* dx, const float* dy, const Nf4Matrix& W, int64_t M, int64_t N, int64_t K) {
  check(W.rows == N && W.cols == K, "nf4_linear_backward_dx: the weight is not [N, K]");
  const int64_t T = nf4_tile_rows(N, K);
  Tensor tile = Tensor::empty({T, K}, DType::f32, Device::cpu(), MemoryCategory::workspace);
  for (int64_t n0 = 0; n0 < N; n0 += T) {
    const int64_t rows = std::min(T, N - n0);
    dequantize_tile(W, n0, rows, tile.data<float>());
    // dx += dy[:, n0:n0+rows] · tile
    train_gemm(false, false, M, K, rows, 1.f, dy + n0, N, tile.data<float>(), K, 1.f, dx, K);
  }
}

}  // namespace tach::cpu
