// tach's own f32 GEMM on panel-packed weights (cpu/panel_linear.h), the path f32 linears take
// where oneDNN's matmul repacks its weights at every call: against x · Wᵀ in double for every row
// count the kernels treat apart (the GEMV's 1-4, the 6-row blocks and their 1-5 remainders, more
// than one row block), K across the 256-deep blocks and off the vector width, N ragged against
// the 16-column panels and the GEMV's panel groups, strided rows, the bias and activations, zero
// rows; and PackedLinear choosing it for decoding exactly where oneDNN's matmul is `gemm:jit` (ctest
// runs this binary again under DNNL_MAX_CPU_ISA=AVX2, where an AVX-512 CPU chooses it too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "cpu/onednn_engine.h"
#include "cpu/packed_linear.h"
#include "cpu/panel_linear.h"
#include "linear_reference.h"
#include "test_util.h"

namespace tach {
namespace {

using test::random_normal;

std::vector<double> reference(const Tensor& x, int64_t ldx, int64_t M, const Tensor& w, const Tensor& b,
                              cpu::FusedActivation act) {
  return test::linear_reference(x, ldx, M, w.data<float>(), w.size(0), w.size(1), b, act);
}

void check_layer(int64_t M, int64_t K, int64_t N, cpu::FusedActivation act, bool with_bias) {
  SCOPED_TRACE("M " + std::to_string(M) + " K " + std::to_string(K) + " N " + std::to_string(N));
  const Tensor w = random_normal(N, K, uint32_t(K * 7 + N), 0.05f);
  const Tensor b = with_bias ? random_normal(1, N, uint32_t(N), 0.1f).reshape({N}) : Tensor();
  const int64_t ldx = K + 5, ldy = N + 3;
  const Tensor x = random_normal(std::max<int64_t>(M, 1), ldx, uint32_t(M + 1));
  const cpu::PanelLinear layer(w, b, act);
  const int64_t padded = (N + 15) / 16 * 16;
  EXPECT_EQ(layer.packed_bytes(), size_t(padded * K * 4));
  std::vector<float> y(static_cast<size_t>(std::max<int64_t>(M, 1) * ldy), 5.f);
  layer.forward(x.data<float>(), M, ldx, y.data(), ldy);
  if (M == 0) {
    EXPECT_EQ(y[0], 5.f) << "zero rows write nothing";
    return;
  }
  test::expect_near_scaled(y.data(), ldy, reference(x, ldx, M, w, b, act), M, N, 2e-5);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = N; j < ldy; ++j) ASSERT_EQ(y[size_t(m * ldy + j)], 5.f) << "the gap past N is untouched";
}

TEST(PanelLinear, EveryRowCountAndWidth) {
  if (!cpu::PanelLinear::available()) GTEST_SKIP() << "built without AVX2/FMA: no panel kernels";
  // Rows: the GEMV (0-4), one 6-row block and each remainder, past one 144-row block.
  // K: under a vector, off the width, exactly one and across 256-deep blocks.
  // N: under a panel, one panel, ragged after the GEMV's 4-, 3- and 2-panel groups.
  for (int64_t M : {0, 1, 2, 3, 4, 5, 6, 7, 11, 13, 150})
    for (int64_t K : {1, 7, 256, 600})
      for (int64_t N : {3, 16, 71})
        check_layer(M, K, N, K == 7 ? cpu::FusedActivation::gelu_erf : cpu::FusedActivation::none, N != 16);
}

TEST(PanelLinear, Activations) {
  if (!cpu::PanelLinear::available()) GTEST_SKIP() << "built without AVX2/FMA: no panel kernels";
  for (auto act : {cpu::FusedActivation::relu, cpu::FusedActivation::tanh, cpu::FusedActivation::gelu_erf})
    for (int64_t M : {1, 3, 20}) check_layer(M, 300, 40, act, true);
}

// The GEMV's sums run over all of K at once; a long K (an FFN's down projection) stays accurate.
TEST(PanelLinear, LongK) {
  if (!cpu::PanelLinear::available()) GTEST_SKIP() << "built without AVX2/FMA: no panel kernels";
  for (int64_t M : {1, 2, 9}) check_layer(M, 4864, 20, cpu::FusedActivation::none, true);
}

TEST(PanelLinear, PackedLinearTakesItForDecodingWhereOneDnnRepacks) {
  if (std::getenv("TACH_F32_GEMM") != nullptr) GTEST_SKIP() << "TACH_F32_GEMM forces the choice";
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc src({128, 256}, dt::f32, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc any({256, 256}, dt::f32, dnnl::memory::format_tag::any);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, any, src), cpu::onednn_engine());
  const bool repacks = std::string(pd.impl_info_str()).rfind("gemm:", 0) == 0;
  EXPECT_EQ(cpu::PanelLinear::chosen_for(true), repacks && cpu::PanelLinear::available())
      << "oneDNN's f32 matmul here: " << pd.impl_info_str();
  EXPECT_FALSE(cpu::PanelLinear::chosen_for(false)) << "a batch's many rows stay on oneDNN";

  const int64_t N = 40, K = 64, M = 3;
  const Tensor w = random_normal(N, K, 3, 0.05f), x = random_normal(M, K, 4);
  for (bool decoding : {false, true}) {
    const cpu::PackedLinear layer(w, Tensor(), DType::f32, cpu::FusedActivation::tanh, 128, decoding);
    EXPECT_EQ(layer.compute_dtype(), DType::f32);
    const size_t panels = size_t(48 * K * 4);  // 16-column panels, N padded to 48
    EXPECT_EQ(layer.packed_bytes() == panels, decoding && repacks && cpu::PanelLinear::available());
    std::vector<float> y(size_t(M * N));
    layer.forward(x.data<float>(), M, K, y.data(), N);
    test::expect_near_scaled(y.data(), N, reference(x, K, M, w, Tensor(), cpu::FusedActivation::tanh), M, N, 2e-5);
  }
}

}  // namespace
}  // namespace tach
