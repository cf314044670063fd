// NF4 quantization against bitsandbytes (scripts/golden/make_nf4_fixtures.py, its CPU backend):
// the 4-bit codes, both code books and dequantization bit for bit, the double-quantized absmax
// values within the limits below; and the tiled NF4 GEMM against a GEMM on the dequantized weight.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cpu/gemm.h"
#include "cpu/nf4.h"
#include "cpu/nf4_gemm.h"
#include "model/safetensors.h"
#include "test_util.h"

namespace tach {
namespace {

using model::SafetensorsFile;

Tensor get(const SafetensorsFile& f, const std::string& name) {
  const auto* e = f.find(name);
  EXPECT_NE(e, nullptr) << name;
  return f.tensor(*e).contiguous();
}

class Nf4Case : public ::testing::TestWithParam<std::string> {};

// The 4-bit codes are bitsandbytes' bit for bit, and so is dequantization from its own state.
TEST_P(Nf4Case, CodesAndDequantizationMatchBitsandbytesBitForBit) {
  const auto f = SafetensorsFile::open(test::fixtures_dir() + "/nf4/cases.safetensors");
  const std::string c = GetParam();
  const Tensor w = get(f, c + ".w");
  const cpu::Nf4Tensor q = cpu::quantize_nf4(w.data<float>(), w.size(0), w.size(1));
  const Tensor codes = get(f, c + ".codes");
  ASSERT_EQ(q.codes.numel(), codes.numel());
  int64_t code_diffs = 0;
  for (int64_t i = 0; i < codes.numel(); ++i) code_diffs += q.codes.data<uint8_t>()[i] != codes.data<uint8_t>()[i];
  EXPECT_EQ(code_diffs, 0) << "packed NF4 bytes that differ from bitsandbytes'";

  cpu::Nf4Tensor theirs;
  theirs.rows = w.size(0), theirs.cols = w.size(1);
  theirs.codes = codes;
  theirs.qabsmax = get(f, c + ".qabsmax");
  theirs.absmax2 = get(f, c + ".absmax2");
  theirs.offset = get(f, c + ".offset").data<float>()[0];
  const Tensor dequant = get(f, c + ".dequant");
  std::vector<float> out(static_cast<size_t>(w.numel()));
  cpu::dequantize_nf4_rows(theirs, 0, w.size(0), out.data());
  EXPECT_EQ(0, std::memcmp(out.data(), dequant.data<float>(), out.size() * 4)) << "dequantized values differ";
  // A tile from the middle gives the same values as the whole.
  const int64_t r0 = w.size(0) / 3, r1 = w.size(0) / 3 + 5;
  std::vector<float> tile(static_cast<size_t>((r1 - r0) * w.size(1)));
  cpu::dequantize_nf4_rows(theirs, r0, r1, tile.data());
  EXPECT_EQ(0, std::memcmp(tile.data(), out.data() + r0 * w.size(1), tile.size() * 4));
}

// The double quantization: bitsandbytes' offset is torch's float mean (its own summation order;
// tach sums in double and rounds, so the two may differ by one ulp), and its CPU search for the
// nearest 8-bit code is approximate near zero, where tach's exact search can pick the neighbour.
// So: the offset within one ulp, every 8-bit code equal or one step away with tach's the
// nearer, absmax2 within a few ulps (it is max |absmax - offset|), and the dequantized weight
// within 1% of each block's absmax (one step of the 8-bit code, scaled).
TEST_P(Nf4Case, DoubleQuantizationAgreesWithBitsandbytes) {
  const auto f = SafetensorsFile::open(test::fixtures_dir() + "/nf4/cases.safetensors");
  const std::string c = GetParam();
  const Tensor w = get(f, c + ".w");
  const cpu::Nf4Tensor q = cpu::quantize_nf4(w.data<float>(), w.size(0), w.size(1));
  const float offset = get(f, c + ".offset").data<float>()[0];
  EXPECT_LE(std::fabs(q.offset - offset), std::nextafter(offset, 1.0f) - offset);
  const Tensor qabsmax = get(f, c + ".qabsmax"), absmax2 = get(f, c + ".absmax2");
  ASSERT_EQ(q.absmax2.numel(), absmax2.numel());
  for (int64_t i = 0; i < absmax2.numel(); ++i)
    EXPECT_NEAR(q.absmax2.data<float>()[i], absmax2.data<float>()[i], 5e-7 * absmax2.data<float>()[i]) << i;
  int64_t differ = 0;
  for (int64_t i = 0; i < qabsmax.numel(); ++i) {
    const int a = q.qabsmax.data<uint8_t>()[i], b = qabsmax.data<uint8_t>()[i];
    EXPECT_LE(std::abs(a - b), 1) << "block " << i;
    differ += a != b;
  }
  EXPECT_LE(differ * 100, qabsmax.numel()) << "more than 1% of the 8-bit absmax codes differ";
  std::vector<float> absmax(static_cast<size_t>(qabsmax.numel()));
  q.absmax(absmax.data());
  const Tensor dequant = get(f, c + ".dequant");
  std::vector<float> out(static_cast<size_t>(w.numel()));
  cpu::dequantize_nf4_rows(q, 0, w.size(0), out.data());
  for (int64_t i = 0; i < w.numel(); ++i)
    ASSERT_NEAR(out[size_t(i)], dequant.data<float>()[i], 1e-2 * std::fabs(absmax[size_t(i / 64)]) + 1e-6) << i;
}

// width16 .. width80: rows that are not a whole number of 64-blocks, so blocks span rows.
INSTANTIATE_TEST_SUITE_P(Bitsandbytes, Nf4Case,
                         ::testing::Values("normal", "outliers", "from_bf16", "many_blocks", "width16", "width32",
                                           "width40", "width80"));

TEST(Nf4, CodeBooksAreBitsandbytes) {
  const auto f = SafetensorsFile::open(test::fixtures_dir() + "/nf4/cases.safetensors");
  const Tensor nf4 = get(f, "normal.nf4"), code2 = get(f, "normal.code2");
  for (int i = 0; i < 16; ++i) EXPECT_EQ(cpu::nf4_code_book()[i], nf4.data<float>()[i]) << i;
  for (int i = 0; i < 256; ++i) EXPECT_EQ(cpu::dynamic_code_book()[i], code2.data<float>()[i]) << i;
}

// Storage: half a byte per weight plus the block overhead (1/64 byte of 8-bit absmax).
TEST(Nf4, StorageIsAboutHalfAByteAWeight) {
  std::vector<float> w(768 * 3072);
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0, 0.02f);
  for (auto& v : w) v = n(rng);
  const cpu::Nf4Tensor q = cpu::quantize_nf4(w.data(), 768, 3072);
  const double per_weight = double(q.bytes()) / double(w.size());
  EXPECT_NEAR(per_weight, 0.5 + 1.0 / 64, 0.001);
}

// The tiled GEMMs (forward y = x Wᵀ + b, backward dx += dy W) against sgemm on the dequantized
// weight, with a fused weight of three parts and a width that splits 64-blocks across rows.
TEST(Nf4, TiledGemmMatchesTheDequantizedWeight) {
  for (const int64_t K : {48, 64, 200}) {
    const int64_t M = 37;
    const std::vector<int64_t> parts = {64, 64, 32};
    const int64_t N = 160;
    std::mt19937 rng(static_cast<unsigned>(K));
    std::normal_distribution<float> n(0, 1);
    std::vector<float> W(static_cast<size_t>(N * K)), x(static_cast<size_t>(M * K)), b(static_cast<size_t>(N)),
        dy(static_cast<size_t>(M * N));
    for (auto* v : {&W, &x, &b, &dy})
      for (auto& e : *v) e = n(rng);
    const cpu::Nf4Matrix q = cpu::quantize_nf4_matrix(W.data(), parts, K);
    std::vector<float> Wd(size_t(N * K));
    q.dequantize_rows(0, N, Wd.data());
    std::vector<float> y(size_t(M * N)), y_ref(size_t(M * N));
    cpu::nf4_linear_forward(y.data(), x.data(), q, b.data(), M, N, K);
    for (int64_t m = 0; m < M; ++m) std::memcpy(&y_ref[size_t(m * N)], b.data(), size_t(N) * 4);
    cpu::sgemm(cpu::GemmBackend::onednn, false, true, M, N, K, 1, x.data(), K, Wd.data(), K, 1, y_ref.data(), N);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_NEAR(y[i], y_ref[i], 1e-4 * (1 + std::fabs(y_ref[i]))) << K << " " << i;
    std::vector<float> dx(size_t(M * K), 0.5f), dx_ref(size_t(M * K), 0.5f);
    cpu::nf4_linear_backward_dx(dx.data(), dy.data(), q, M, N, K);
    cpu::sgemm(cpu::GemmBackend::onednn, false, false, M, K, N, 1, dy.data(), N, Wd.data(), K, 1, dx_ref.data(), K);
    for (size_t i = 0; i < dx.size(); ++i)
      ASSERT_NEAR(dx[i], dx_ref[i], 1e-4 * (1 + std::fabs(dx_ref[i]))) << K << " " << i;
  }
}

}  // namespace
}  // namespace tach
