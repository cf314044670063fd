// Each op against a naive double-precision reference. Tolerances per dtype, with reasons.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "cpu/gemm.h"
#include "cpu/packed_linear.h"
#include "cpu/vec_math.h"
#include "ops/argmax.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/embedding.h"
#include "ops/kv_append.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::ops {
namespace {

Tensor random_tensor(const Shape& shape, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, scale);
  Tensor t = Tensor::empty(shape, DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}

// y = act(x Wᵀ + b) in double.
std::vector<double> linear_reference(const Tensor& x, const Tensor& w, const Tensor& b, int act) {
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  std::vector<double> y(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = b.defined() ? b.data<float>()[n] : 0;
      for (int64_t k = 0; k < K; ++k) s += double(x.data<float>()[m * K + k]) * w.data<float>()[n * K + k];
      if (act == 1) s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
      if (act == 2) s = std::max(0.0, s);
      if (act == 3) s = std::tanh(s);
      y[size_t(m * N + n)] = s;
    }
  return y;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double atol, double rtol) {
  ASSERT_EQ(size_t(got.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.data<float>()[i], want[i], atol + rtol * std::fabs(want[i])) << "element " << i;
}

struct LinearCase {
  int64_t M, N, K;
  cpu::FusedActivation act;
};

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, F32MatchesReference) {
  const auto p = GetParam();
  Tensor x = random_tensor({p.M, p.K}, 1), w = random_tensor({p.N, p.K}, 2, 0.2f), b = random_tensor({p.N}, 3);
  cpu::PackedLinear lin(w, b, DType::f32, p.act);
  Tensor y = Tensor::empty({p.M, p.N}, DType::f32);
  linear_forward(y, x, lin);
  // f32 accumulation over K terms of size ~0.2: 1e-4 absolute covers K up to a few thousand.
  expect_close(y, linear_reference(x, w, b, int(p.act)), 1e-4, 1e-4);
}

TEST_P(LinearTest, Bf16WithinBf16Rounding) {
  if (!cpu::onednn_bf16_supported()) GTEST_SKIP() << "no bf16 GEMM on this CPU (oneDNN needs AVX-512 for it)";
  const auto p = GetParam();
  Tensor x = random_tensor({p.M, p.K}, 1), w = random_tensor({p.N, p.K}, 2, 0.2f), b = random_tensor({p.N}, 3);
  cpu::PackedLinear lin(w, b, DType::bf16, p.act);
  Tensor y = Tensor::empty({p.M, p.N}, DType::f32);
  linear_forward(y, x, lin);
  // Inputs rounded to 8 bits of mantissa: relative error per product ~2^-8, summed over K
  // random-sign terms it grows like sqrt(K); 0.05 + 2% is loose enough for K = 300.
  expect_close(y, linear_reference(x, w, b, int(p.act)), 0.05, 0.02);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearTest,
                         ::testing::Values(LinearCase{1, 1, 1, cpu::FusedActivation::none},
                                           LinearCase{7, 13, 29, cpu::FusedActivation::gelu_erf},
                                           LinearCase{64, 48, 32, cpu::FusedActivation::relu},
                                           LinearCase{130, 33, 300, cpu::FusedActivation::tanh},
                                           LinearCase{3, 200, 17, cpu::FusedActivation::none}));

TEST(Linear, StridedRowsAndShapeErrors) {
  Tensor big = random_tensor({4, 10}, 5), w = random_tensor({3, 6}, 6);
  Tensor x = big.narrow(1, 2, 6);  // rows of stride 10
  cpu::PackedLinear lin(w, Tensor(), DType::f32, cpu::FusedActivation::none);
  Tensor y = Tensor::empty({4, 3}, DType::f32);
  linear_forward(y, x, lin);
  expect_close(y, linear_reference(x.contiguous(), w, Tensor(), 0), 1e-5, 1e-5);
  Tensor wrong = Tensor::empty({4, 5}, DType::f32);
  EXPECT_THROW(linear_forward(y, wrong, lin), Error);
}

// ops::Linear placed on the CPU is the packed layer: the same numbers, and its errors.
TEST(Linear, PlacedOnTheCpuIsThePackedLayer) {
  Tensor x = random_tensor({5, 24}, 7), w = random_tensor({9, 24}, 8, 0.2f), b = random_tensor({9}, 9);
  Linear placed(w, b, {Device::cpu(), DType::f32}, cpu::FusedActivation::gelu_erf);
  ASSERT_NE(placed.packed(), nullptr);
  EXPECT_EQ(placed.device(), Device::cpu());
  EXPECT_EQ(placed.out_features(), 9);
  Tensor y = Tensor::empty({5, 9}, DType::f32);
  linear_forward(y, x, placed);
  expect_close(y, linear_reference(x, w, b, 1), 1e-4, 1e-4);
  EXPECT_NE(test::error_of([&] {
              Linear(w, random_tensor({4}, 10), {Device::cpu(), DType::f32});
            }).find("bias"),
            std::string::npos);
}

// A tensor on another device than the op's others is an error naming both, before any kernel
// runs (a GPU tensor is made here without a GPU by borrowing host bytes under a cuda device).
TEST(Dispatch, MixedDevicesAreRefusedByName) {
  std::vector<float> bytes(32);
  const Tensor gpu_looking = Tensor::from_borrowed(bytes.data(), {4, 8}, DType::f32, nullptr, Device::cuda(0));
  Tensor out = Tensor::empty({4, 8}, DType::f32);
  const Tensor g = random_tensor({8}, 11), b = random_tensor({8}, 12);
  const std::string e = test::error_of([&] { layer_norm_forward(out, out, gpu_looking, g, b, 1e-5f); });
  EXPECT_NE(e.find("cuda:0"), std::string::npos) << e;
  EXPECT_NE(e.find("not on cpu"), std::string::npos) << e;
}

TEST(Gemm, BackendsAgree) {
  const int64_t M = 37, N = 23, K = 41;
  Tensor a = random_tensor({M, K}, 1), b = random_tensor({N, K}, 2);
  Tensor c1 = Tensor::zeros({M, N}, DType::f32), c2 = Tensor::zeros({M, N}, DType::f32);
  cpu::sgemm(cpu::GemmBackend::onednn, false, true, M, N, K, 1.f, a.data<float>(), K, b.data<float>(), K, 0.f,
             c1.data<float>(), N);
  cpu::sgemm(cpu::GemmBackend::openblas, false, true, M, N, K, 1.f, a.data<float>(), K, b.data<float>(), K, 0.f,
             c2.data<float>(), N);
  for (int64_t i = 0; i < M * N; ++i) EXPECT_NEAR(c1.data<float>()[i], c2.data<float>()[i], 1e-4);
}

TEST(LayerNorm, MatchesReferenceWithResidual) {
  const int64_t N = 5, C = 37;
  Tensor x = random_tensor({N, C}, 1, 3.f), r = random_tensor({N, C}, 2), g = random_tensor({C}, 3),
         b = random_tensor({C}, 4);
  Tensor out = Tensor::empty({N, C}, DType::f32);
  layer_norm_forward(out, x, r, g, b, 1e-12f);
  std::vector<double> want(size_t(N * C));
  for (int64_t n = 0; n < N; ++n) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += double(x.data<float>()[n * C + c]) + r.data<float>()[n * C + c];
    mean /= double(C);
    for (int64_t c = 0; c < C; ++c) {
      const double d = double(x.data<float>()[n * C + c]) + r.data<float>()[n * C + c] - mean;
      var += d * d;
    }
    var /= double(C);
    for (int64_t c = 0; c < C; ++c)
      want[size_t(n * C + c)] = (double(x.data<float>()[n * C + c]) + r.data<float>()[n * C + c] - mean) /
                                    std::sqrt(var + 1e-12) * g.data<float>()[c] +
                                b.data<float>()[c];
  }
  expect_close(out, want, 1e-5, 1e-5);
  EXPECT_THROW(layer_norm_forward(out, x, r, random_tensor({C + 1}, 5), b, 1e-5f), Error);
}

TEST(Embedding, GathersConvertsAndRejectsBadIds) {
  Tensor table = random_tensor({10, 4}, 1);
  Tensor table_bf16 = table.to(DType::bf16);
  Tensor ids = Tensor::empty({3}, DType::i32);
  ids.data<int32_t>()[0] = 9;
  ids.data<int32_t>()[1] = 0;
  ids.data<int32_t>()[2] = 9;
  Tensor out = Tensor::empty({3, 4}, DType::f32);
  embedding_forward(out, ids, table, false);
  EXPECT_EQ(out.data<float>()[0], table.data<float>()[36]);
  embedding_forward(out, ids, table_bf16, true);
  EXPECT_NEAR(out.data<float>()[5], 2 * table.data<float>()[1], 2e-2);
  ids.data<int32_t>()[1] = 10;
  EXPECT_THROW(embedding_forward(out, ids, table, false), Error);
}

// Attention against a double reference that applies the mask as Hugging Face does: finfo.min
// added to a padded key's score (so an all-padding row attends uniformly to every key).
void check_attention(const std::vector<std::vector<int32_t>>& mask_rows) {
  const int64_t B = int64_t(mask_rows.size()), T = int64_t(mask_rows[0].size()), H = 2, D = 3, C = H * D;
  Tensor qkv = random_tensor({B, T, 3 * C}, 1);
  Tensor mask = Tensor::empty({B, T}, DType::i32);
  for (int64_t i = 0; i < B * T; ++i) mask.data<int32_t>()[i] = mask_rows[size_t(i / T)][size_t(i % T)];
  Tensor out = Tensor::empty({B, T, C}, DType::f32);
  const float scale = 1.0f / std::sqrt(float(D));
  attention_forward(out, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask, int(H), scale);
  std::vector<double> want(size_t(B * T * C));
  const float* p = qkv.data<float>();
  const double lowest = std::numeric_limits<float>::lowest();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t e = 0; e < D; ++e)
            d += double(p[(b * T + i) * 3 * C + h * D + e]) * p[(b * T + j) * 3 * C + C + h * D + e];
          // In f32, score + finfo.min rounds to finfo.min for any modest score.
          s[size_t(j)] = mask.data<int32_t>()[b * T + j] ? d * scale : lowest;
          mx = std::max(mx, s[size_t(j)]);
        }
        for (auto& v : s) sum += (v = std::exp(v - mx));
        for (int64_t e = 0; e < D; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += s[size_t(j)] / sum * p[(b * T + j) * 3 * C + 2 * C + h * D + e];
          want[size_t((b * T + i) * C + h * D + e)] = acc;
        }
      }
  expect_close(out, want, 1e-5, 1e-5);
  // The first Tq queries of each sequence only (a classifier's last layer): the same rows.
  for (int64_t Tq : {int64_t{1}, std::min<int64_t>(2, T)}) {
    Tensor first = Tensor::empty({B, Tq, C}, DType::f32);
    attention_forward(first, qkv.narrow(1, 0, Tq).narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask,
                      int(H), scale);
    std::vector<double> want_first;
    for (int64_t b = 0; b < B; ++b)
      want_first.insert(want_first.end(), want.begin() + b * T * C, want.begin() + (b * T + Tq) * C);
    expect_close(first, want_first, 1e-5, 1e-5);
  }
  // More query rows than keys is a shape error, not a read past the buffer.
  Tensor too_many = Tensor::empty({B, T + 1, C}, DType::f32);
  Tensor qkv_long = random_tensor({B, T + 1, 3 * C}, 2);
  EXPECT_THROW(attention_forward(too_many, qkv_long.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask,
                                 int(H), scale),
               Error);
}

TEST(Attention, RightPaddingUsesOnlyRealKeys) { check_attention({{1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}}); }
TEST(Attention, GeneralMaskPatternIsAdditive) { check_attention({{1, 0, 1, 1, 0}, {0, 1, 1, 1, 1}}); }
TEST(Attention, AllPaddingRowAttendsUniformlyAsInTransformers) { check_attention({{0, 0, 0, 0}, {1, 1, 0, 0}}); }
TEST(Attention, LongSequence) {
  std::vector<int32_t> row(200, 1);
  for (int i = 150; i < 200; ++i) row[size_t(i)] = 0;
  check_attention({row});
}

// Greedy decoding's choice: the first of equal maxima (torch.argmax), after the softcap when there
// is one, which can make two different logits equal.
TEST(ArgmaxRows, FirstMaximumAfterTheSoftcap) {
  Tensor logits = Tensor::empty({3, 6}, DType::f32);
  const float values[] = {0,  2,   5,  5,   1,  -1,  // tie: the first
                          -3, 300, 1,  400, 0,  0,   // 400 > 300, but both cap to 30.0f
                          -1, -1,  -1, -1,  -1, -1};
  std::copy(std::begin(values), std::end(values), logits.data<float>());
  Tensor out = Tensor::empty({3}, DType::i32);
  argmax_rows(out, logits);
  EXPECT_EQ(out.data<int32_t>()[0], 2);
  EXPECT_EQ(out.data<int32_t>()[1], 3);
  EXPECT_EQ(out.data<int32_t>()[2], 0);
  argmax_rows(out, logits, 30.0);
  EXPECT_EQ(out.data<int32_t>()[1], 1);  // cap * tanh(400 / cap) and of 300 round to the same f32
  EXPECT_EQ(float(30.0 * std::tanh(400.0 / 30.0)), float(30.0 * std::tanh(300.0 / 30.0)));
  Tensor wrong = Tensor::empty({2}, DType::i32);
  EXPECT_THROW(argmax_rows(wrong, logits), Error);
}

// The key/value cache append: each sequence's new rows land after its past, keys and values from
// their columns of the fused rows; nothing else of the cache is touched.
TEST(KvAppend, RowsLandAfterThePast) {
  const int64_t B = 2, T = 3, capacity = 8, width = 4, ld = 20;
  Tensor qkv = Tensor::empty({B, T, ld}, DType::f32);
  for (int64_t i = 0; i < qkv.numel(); ++i) qkv.data<float>()[i] = float(i);
  Tensor k = Tensor::zeros({B, capacity, width}, DType::f32), v = Tensor::zeros({B, capacity, width}, DType::f32);
  KvAppendArgs a;
  a.B = B, a.T = T, a.past = 2, a.capacity = capacity, a.width = width, a.ld_qkv = ld, a.k_col = 8, a.v_col = 12;
  kv_append(k.data<float>(), v.data<float>(), qkv.data<float>(), a);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = 0; p < capacity; ++p)
      for (int64_t c = 0; c < width; ++c) {
        const bool written = p >= 2 && p < 2 + T;
        const float row = float((b * T + (p - 2)) * ld);
        EXPECT_EQ(k.data<float>()[(b * capacity + p) * width + c], written ? row + 8 + float(c) : 0.0f);
        EXPECT_EQ(v.data<float>()[(b * capacity + p) * width + c], written ? row + 12 + float(c) : 0.0f);
      }
  a.past = 6;  // 6 + 3 rows do not fit in 8
  EXPECT_THROW(kv_append(k.data<float>(), v.data<float>(), qkv.data<float>(), a), Error);
  // A length in device memory is for a captured CUDA step; the CPU says so rather than read it.
  const int32_t length = 2;
  a.past = 2, a.device_past = &length;
  EXPECT_THROW(kv_append(k.data<float>(), v.data<float>(), qkv.data<float>(), a), Error);
}

TEST(CausalAttention, ALengthOnTheDeviceIsRefusedOnTheCpu) {
  const Tensor q = Tensor::zeros({1, 1, 8}, DType::f32), kv = Tensor::zeros({1, 4, 8}, DType::f32);
  Tensor out = Tensor::empty({1, 1, 8}, DType::f32);
  CausalAttentionArgs a;
  a.B = 1, a.Tq = 1, a.past = 3, a.H = 2, a.KVH = 2, a.D = 4;
  a.ld_q = 8, a.ld_kv = 8, a.batch_stride_kv = 32, a.ld_out = 8, a.mask_stride = 4;
  const int32_t length = 3;
  a.device_past = &length;
  try {
    causal_attention_forward(out.data<float>(), q.data<float>(), kv.data<float>(), kv.data<float>(), nullptr, a);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("on the device"), std::string::npos) << e.what(); }
}

TEST(VecMath, ExpErfGeluAccuracy) {
  for (int i = -10000; i <= 8800; ++i) {  // x from -100 to 88 in steps of 0.01
    const double x = i * 0.01;
    const float f = float(x);
    const double want = std::exp(double(f));
    const float got = cpu::fast_exp(f);
    if (want < 1.5e-38) {
      EXPECT_LE(got, 1.5e-38f) << x;  // at the bottom of the normal range: 0 or nearly
    } else {
      EXPECT_NEAR(got, want, 3e-7 * want) << x;  // ~2.5 ulp
    }
  }
  EXPECT_EQ(cpu::fast_exp(-1e30f), 0.0f);
  EXPECT_EQ(cpu::fast_exp(std::numeric_limits<float>::lowest()), 0.0f);
  EXPECT_TRUE(std::isinf(cpu::fast_exp(100.f)));
  for (int i = -12000; i <= 12000; ++i) {  // x from -12 to 12 in steps of 0.001
    const double x = i * 0.001;
    EXPECT_NEAR(cpu::fast_erf(float(x)), std::erf(x), 5e-7) << x;  // A&S 7.1.26: 1.5e-7, plus f32 rounding
    const double gelu = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    EXPECT_NEAR(cpu::gelu_erf(float(x)), gelu, 5e-7 * std::max(1.0, std::fabs(x))) << x;
  }
}

TEST(VecMath, VectorPathsMatchScalar) {
  // The AVX-512 path (when built) against the scalar reference, on lengths with tails.
  for (int64_t n : {1, 5, 16, 17, 128, 131}) {
    Tensor a = random_tensor({n}, unsigned(n), 4.f);
    Tensor b = a.contiguous().to(DType::f32);
    cpu::softmax_inplace(a.data<float>(), n);
    cpu::softmax_inplace_portable(b.data<float>(), n);
    double total = 0;
    for (int64_t j = 0; j < n; ++j) {
      EXPECT_NEAR(a.data<float>()[j], b.data<float>()[j], 1e-6) << n << " " << j;
      total += a.data<float>()[j];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
    Tensor g = random_tensor({3, n}, unsigned(n) + 7, 5.f), g2 = g.to(DType::f32);
    cpu::gelu_erf_inplace(g.data<float>(), 3, n, n);
    for (int64_t j = 0; j < 3 * n; ++j)
      EXPECT_NEAR(g.data<float>()[j], cpu::gelu_erf(g2.data<float>()[j]),
                  2e-6 * std::max(1.f, std::fabs(g2.data<float>()[j])));
  }
}

TEST(OpCost, DeclaredFromArguments) {
  const OpCost l = linear_cost(4, 3, 2, DType::f32, true);
  EXPECT_EQ(l.flops, 2.0 * 4 * 3 * 2 + 12);
  EXPECT_EQ(l.bytes_written, 4.0 * 3 * 4);
  // The weight bytes the kernels read: f32 4, bf16 2, int8 1 + a 4-byte scale per row, NF4 a half
  // + a 4-byte absmax per 64 weights.
  const auto weight_bytes = [](DType d, int64_t N, int64_t K) {
    return linear_cost(1, N, K, d, false).bytes_read - 4.0 * double(K);
  };
  EXPECT_EQ(weight_bytes(DType::f32, 64, 128), 64.0 * 128 * 4);
  EXPECT_EQ(weight_bytes(DType::bf16, 64, 128), 64.0 * 128 * 2);
  EXPECT_EQ(weight_bytes(DType::i8, 64, 128), 64.0 * 128 + 64 * 4);
  EXPECT_EQ(weight_bytes(DType::nf4, 64, 128), 64.0 * 128 / 2 + 64.0 * 128 / 64 * 4);
  const OpCost a = attention_cost(1, 128, 12, 64);
  EXPECT_EQ(a.flops, 12 * (4.0 * 128 * 128 * 64 + 5.0 * 128 * 128));
  EXPECT_GT(layer_norm_cost(10, 10, true).intensity(), 0);
}

}  // namespace
}  // namespace tach::ops
