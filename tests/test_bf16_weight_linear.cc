// bf16 weights with f32 arithmetic (cpu/bf16_weight_linear.h), the path `--dtype bf16` takes on
// CPUs without a bf16 GEMM: the GEMV and the widened tiles against x · bf16(W)ᵀ in double, for
// every row count the GEMV takes, K off the vector width, ragged N, strided rows, the bias and
// activations, zero rows; and PackedLinear choosing it where oneDNN has no bf16 matmul (ctest
// runs this binary again under DNNL_MAX_CPU_ISA=AVX2).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu/bf16_weight_linear.h"
#include "cpu/gemm.h"
#include "cpu/packed_linear.h"
#include "linear_reference.h"
#include "test_util.h"

namespace tach {
namespace {

using test::random_normal;

// x · bf16(W)ᵀ: the weights rounded as the layer stores them.
std::vector<double> reference(const Tensor& x, int64_t ldx, int64_t M, const Tensor& w, const Tensor& b,
                              cpu::FusedActivation act) {
  const int64_t N = w.size(0), K = w.size(1);
  std::vector<float> rounded(static_cast<size_t>(N * K));
  for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = bf16_to_f32(f32_to_bf16(w.data<float>()[i]));
  return test::linear_reference(x, ldx, M, rounded.data(), N, K, b, act);
}

void expect_close(const std::vector<float>& y, int64_t ldy, const std::vector<double>& want, int64_t M, int64_t N) {
  test::expect_near_scaled(y.data(), ldy, want, M, N, 2e-5);
}

TEST(Bf16WeightLinear, EveryRowCountAndWidth) {
  for (int64_t M : {0, 1, 2, 4, 5, 33})
    for (int64_t K : {1, 7, 16, 33, 896})
      for (int64_t N : {1, 19}) {
        SCOPED_TRACE("M " + std::to_string(M) + " K " + std::to_string(K) + " N " + std::to_string(N));
        const Tensor w = random_normal(N, K, uint32_t(K * 7 + N), 0.05f);
        const Tensor b = random_normal(1, N, uint32_t(N), 0.1f).reshape({N});
        const auto act = K == 33 ? cpu::FusedActivation::gelu_erf : cpu::FusedActivation::none;
        const int64_t ldx = K + 5, ldy = N + 3;
        const Tensor x = random_normal(std::max<int64_t>(M, 1), ldx, uint32_t(M + 1));
        const cpu::Bf16WeightLinear layer(w, b, act);
        EXPECT_EQ(layer.packed_bytes(), size_t(N * K * 2));
        std::vector<float> y(static_cast<size_t>(std::max<int64_t>(M, 1) * ldy), 5.f);
        layer.forward(x.data<float>(), M, ldx, y.data(), ldy);
        if (M == 0) {
          EXPECT_EQ(y[0], 5.f) << "zero rows write nothing";
          continue;
        }
        expect_close(y, ldy, reference(x, ldx, M, w, b, act), M, N);
        for (int64_t m = 0; m < M; ++m) EXPECT_EQ(y[size_t(m * ldy + N)], 5.f) << "the gap is untouched";
      }
}

TEST(Bf16WeightLinear, PackedLinearTakesItWithoutABf16Gemm) {
  const int64_t N = 24, K = 64, M = 2;
  const Tensor w = random_normal(N, K, 3, 0.05f), x = random_normal(M, K, 4);
  const cpu::PackedLinear layer(w, Tensor(), DType::bf16, cpu::FusedActivation::tanh);
  EXPECT_EQ(layer.compute_dtype(), DType::bf16);
  std::vector<float> y(size_t(M * N));
  layer.forward(x.data<float>(), M, K, y.data(), N);
  if (cpu::onednn_bf16_supported()) {
    // oneDNN's bf16 matmul rounds the inputs too: within bf16's rounding of the exact product.
    const auto want = reference(x, K, M, w, Tensor(), cpu::FusedActivation::tanh);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], want[i], 2e-2);
  } else {
    EXPECT_EQ(layer.packed_bytes(), size_t(N * K * 2)) << "bf16 weights, not a packed oneDNN copy";
    expect_close(y, N, reference(x, K, M, w, Tensor(), cpu::FusedActivation::tanh), M, N);
  }
}

}  // namespace
}  // namespace tach
