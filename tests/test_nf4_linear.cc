// The NF4 inference linear (cpu/nf4_linear.h): the GEMV that reads 4-bit codes against a product
// with the dequantized weight (cpu/nf4.h, checked against bitsandbytes in test_nf4), for every
// row count it takes, K of one block and of many, ragged N, strided rows; the tiled path for
// more rows and for K that is not a multiple of the block; the bias, activations and zero rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cpu/nf4.h"
#include "cpu/nf4_linear.h"
#include "cpu/packed_linear.h"
#include "linear_reference.h"
#include "test_util.h"

namespace tach {
namespace {

using test::random_normal;

// y = x · dequant(W)ᵀ + b in double, then the activation.
std::vector<double> reference(const Tensor& x, int64_t ldx, int64_t M, const Tensor& w, const Tensor& b,
                              cpu::FusedActivation act) {
  const int64_t N = w.size(0), K = w.size(1);
  const cpu::Nf4Matrix q = cpu::quantize_nf4_matrix(w.data<float>(), {N}, K);
  std::vector<float> dq(static_cast<size_t>(N * K));
  q.dequantize_rows(0, N, dq.data());
  return test::linear_reference(x, ldx, M, dq.data(), N, K, b, act);
}

void expect_close(const std::vector<float>& y, int64_t ldy, const std::vector<double>& want, int64_t M, int64_t N) {
  test::expect_near_scaled(y.data(), ldy, want, M, N, 2e-5);
}

TEST(Nf4Linear, GemvMatchesTheDequantizedWeight) {
  for (int64_t M : {1, 2, 3, 4})
    for (int64_t K : {64, 128, 896})
      for (int64_t N : {1, 17, 40}) {
        SCOPED_TRACE("M " + std::to_string(M) + " K " + std::to_string(K) + " N " + std::to_string(N));
        const Tensor w = random_normal(N, K, uint32_t(K + N), 0.05f);
        const int64_t ldx = K + 3, ldy = N + 2;  // strided rows on both sides
        const Tensor x = random_normal(M, ldx, uint32_t(M));
        const cpu::Nf4Linear layer(w, Tensor(), cpu::FusedActivation::none);
        std::vector<float> y(static_cast<size_t>(M * ldy), 99.f);
        layer.forward(x.data<float>(), M, ldx, y.data(), ldy);
        expect_close(y, ldy, reference(x, ldx, M, w, Tensor(), cpu::FusedActivation::none), M, N);
        for (int64_t m = 0; m < M; ++m) EXPECT_EQ(y[size_t(m * ldy + N)], 99.f) << "the gap is untouched";
      }
}

TEST(Nf4Linear, ManyRowsGoThroughTilesAndAgreeWithTheGemv) {
  const int64_t K = 256, N = 48;
  const Tensor w = random_normal(N, K, 5, 0.05f), b = random_normal(1, N, 6, 0.1f).reshape({N});
  for (auto act : {cpu::FusedActivation::none, cpu::FusedActivation::gelu_erf, cpu::FusedActivation::relu}) {
    const cpu::Nf4Linear layer(w, b, act);
    for (int64_t M : {0, 4, 5, 33}) {
      SCOPED_TRACE("M " + std::to_string(M));
      const Tensor x = random_normal(std::max<int64_t>(M, 1), K, uint32_t(M + 11));
      std::vector<float> y(static_cast<size_t>(std::max<int64_t>(M, 1) * N), -3.f);
      layer.forward(x.data<float>(), M, K, y.data(), N);
      if (M == 0) {
        EXPECT_EQ(y[0], -3.f) << "zero rows write nothing";
        continue;
      }
      expect_close(y, N, reference(x, K, M, w, b, act), M, N);
    }
  }
}

TEST(Nf4Linear, AWidthOffTheBlockUsesTiles) {
  // K = 32: blocks of 64 span two rows, which the GEMV does not take; the tiles do.
  const int64_t K = 32, N = 6, M = 2;
  const Tensor w = random_normal(N, K, 8, 0.05f), x = random_normal(M, K, 9);
  const cpu::Nf4Linear layer(w, Tensor(), cpu::FusedActivation::none);
  std::vector<float> y(static_cast<size_t>(M * N));
  layer.forward(x.data<float>(), M, K, y.data(), N);
  expect_close(y, N, reference(x, K, M, w, Tensor(), cpu::FusedActivation::none), M, N);
  const Tensor odd = random_normal(3, 7, 10);  // 21 weights: no whole blocks at all
  EXPECT_NE(test::error_of([&] { cpu::Nf4Linear(odd, Tensor(), cpu::FusedActivation::none); }).find("blocks of 64"),
            std::string::npos);
}

TEST(Nf4Linear, PackedLinearHoldsAboutHalfAByteAWeight) {
  const int64_t N = 256, K = 1024;
  const Tensor w = random_normal(N, K, 12, 0.05f);
  const cpu::PackedLinear f32(w, Tensor(), DType::f32, cpu::FusedActivation::none);
  const cpu::PackedLinear nf4(w, Tensor(), DType::nf4, cpu::FusedActivation::none);
  EXPECT_EQ(nf4.compute_dtype(), DType::nf4);
  // 0.5 B + the 8-bit absmax and its f32 copy per 64 weights: 0.578 B per weight.
  EXPECT_NEAR(double(nf4.packed_bytes()) / double(N * K), 0.578, 0.01);
  EXPECT_LT(nf4.packed_bytes(), f32.packed_bytes() / 6);
}

}  // namespace
}  // namespace tach

#ifdef TACH_NEEDS_AVX2
// This build's kernel is the AVX2 one: a CPU without AVX2 cannot run it at all.
int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("skipped: this CPU has no AVX2 and FMA, which this build of the kernel needs\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
#endif
