// Every op the models run, on the CPU and on CUDA with the same inputs, compared within a
// tolerance per dtype (ggml's test-backend-ops, in GoogleTest). The CPU kernels are themselves
// checked against double-precision references (test_ops, test_op_backward_double), so agreement
// here checks the CUDA kernels. Skipped, saying why, without a CUDA device or backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "test_util.h"

namespace tach::ops {
namespace {

const Device kGpu = Device::cuda(0);

// f32 kernels on both sides differ only in summation order: 1e-5 of the values' scale. Attention
// sums exponentials in another order (an online softmax) and the GEMMs use other blockings: 1e-4.
constexpr double kElementwiseTol = 1e-5;
constexpr double kReductionTol = 1e-4;

Tensor random_tensor(const Shape& shape, unsigned seed, float scale = 1.0f) {
  Tensor t = Tensor::empty(shape, DType::f32);
  const std::vector<float> v = test::randn(size_t(t.numel()), seed, scale);
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor on_gpu(const Tensor& t) { return t.to_device(kGpu); }
Tensor on_cpu(const Tensor& t) { return t.to_device(Device::cpu()); }

// Largest |got - want| over the largest |want| (a relative error that stays meaningful where an
// element is near zero by cancellation).
double scaled_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.numel(), want.numel());
  double err = 0, scale = 1e-6;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = std::fabs(double(got.data<float>()[i]) - double(want.data<float>()[i]));
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, double(std::fabs(want.data<float>()[i])));
  }
  return err / scale;
}

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: " << cuda_unavailable_reason();
  }
};

TEST_F(CudaOps, TensorsCopyBothWaysAndAreCounted) {
  const Tensor host = random_tensor({3, 5, 7}, 1);
  const MemoryStats before = memory_stats(kGpu);
  {
    Tensor dev = host.to_device(kGpu, MemoryCategory::weights);
    EXPECT_EQ(dev.device(), kGpu);
    EXPECT_EQ(memory_stats(kGpu)[MemoryCategory::weights].current - before[MemoryCategory::weights].current,
              int64_t(host.nbytes()));
    const Tensor back = on_cpu(dev);
    EXPECT_EQ(0, std::memcmp(back.raw(), host.raw(), host.nbytes()));
    // A strided host view is gathered first; a device copy of a device tensor is a copy.
    const Tensor col = on_cpu(on_gpu(host.reshape({15, 7}).narrow(1, 2, 3)));
    for (int64_t r = 0; r < 15; ++r)
      for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(col.data<float>()[r * 3 + c], host.data<float>()[r * 7 + 2 + c]);
    const Tensor again = on_cpu(dev.to_device(kGpu));
    EXPECT_EQ(0, std::memcmp(again.raw(), host.raw(), host.nbytes()));
    const Tensor z = on_cpu(Tensor::zeros({1000}, DType::f32, kGpu));
    for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(z.data<float>()[i], 0.0f);
  }
  EXPECT_EQ(memory_stats(kGpu).total.current, before.total.current);
  EXPECT_GE(release_cached_memory(kGpu), 0);
}

TEST_F(CudaOps, MixingDevicesIsAnErrorNamingThem) {
  const Tensor x = random_tensor({4, 8}, 2);
  Tensor out = Tensor::empty({4, 8}, DType::f32, kGpu);
  const Tensor g = on_gpu(random_tensor({8}, 3)), b = on_gpu(random_tensor({8}, 4));
  const std::string e = test::error_of([&] { layer_norm_forward(out, x, Tensor(), g, b, 1e-5f); });
  EXPECT_NE(e.find("cuda:0"), std::string::npos) << e;
  EXPECT_NE(e.find("to_device"), std::string::npos) << e;
}

TEST_F(CudaOps, LayerNormMatchesCpu) {
  for (int64_t C : {16, 384, 768, 896}) {
    SCOPED_TRACE("C = " + std::to_string(C));
    const int64_t N = 37;
    const Tensor x = random_tensor({N, C}, 10), res = random_tensor({N, C}, 11, 3.0f);
    const Tensor g = random_tensor({C}, 12), b = random_tensor({C}, 13);
    for (bool with_residual : {false, true}) {
      Tensor want = Tensor::empty({N, C}, DType::f32);
      layer_norm_forward(want, x, with_residual ? res : Tensor(), g, b, 1e-12f);
      // In place on the residual, as the encoder writes h = LayerNorm(proj + h).
      Tensor got = on_gpu(with_residual ? res : x);
      layer_norm_forward(got, with_residual ? on_gpu(x) : got, with_residual ? got : Tensor(), on_gpu(g), on_gpu(b),
                         1e-12f);
      EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << (with_residual ? "with" : "without") << " residual";
    }
  }
}

TEST_F(CudaOps, RmsNormWithResidualMatchesCpu) {
  const int64_t N = 29, C = 896;
  Tensor h = random_tensor({N, C}, 20), delta = random_tensor({N, C}, 21), w = random_tensor({C}, 22);
  Tensor h_gpu = on_gpu(h);
  Tensor want = Tensor::empty({N, C}, DType::f32), got = Tensor::empty({N, C}, DType::f32, kGpu);
  rms_norm_forward(want, h, delta, w, 1e-6f);
  rms_norm_forward(got, h_gpu, on_gpu(delta), on_gpu(w), 1e-6f);
  EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol);
  EXPECT_LT(scaled_error(on_cpu(h_gpu), h), 1e-7) << "the residual stream h += delta";
}

TEST_F(CudaOps, EmbeddingMatchesCpuForEveryTableDtype) {
  const int64_t V = 50, C = 24, N = 33;
  const Tensor table = random_tensor({V, C}, 30);
  Tensor ids = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) ids.data<int32_t>()[i] = int32_t((i * 7) % V);
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Tensor stored = table.to(dt);
    Tensor want = random_tensor({N, C}, 31), got = on_gpu(want);
    embedding_forward(want, ids, stored, true);
    embedding_forward(got, on_gpu(ids), on_gpu(stored), true);
    EXPECT_EQ(scaled_error(on_cpu(got), want), 0.0) << "a lookup and one add are exact";
  }
}

TEST_F(CudaOps, RopeForwardAndInverseMatchCpu) {
  const int64_t N = 11, H = 4, KVH = 2, D = 64, ld = (H + 2 * KVH) * D;
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) positions.data<int32_t>()[i] = int32_t(3 * i + 1);
  RopeSettings s;
  s.head_dim = D;
  s.theta = 1e6;
  const RopeTable table = rope_table(positions, rope_inverse_frequencies(s, 40));
  const RopeTable table_gpu{on_gpu(table.cos), on_gpu(table.sin)};
  const Tensor qkv = random_tensor({N, ld}, 40);
  Tensor want = qkv.to(DType::f32), got = on_gpu(qkv);
  rope_forward(want, H, KVH, D, table);
  rope_forward(got, H, KVH, D, table_gpu);
  EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol);
  rope_backward(got, H, KVH, D, table_gpu);
  EXPECT_LT(scaled_error(on_cpu(got), qkv), 1e-5) << "the inverse rotation restores the input";
}

TEST_F(CudaOps, SiluGateMatchesCpu) {
  const int64_t N = 17, I = 300;
  const Tensor gate_up = random_tensor({N, 2 * I}, 50, 3.0f);
  Tensor want = Tensor::empty({N, I}, DType::f32), got = Tensor::empty({N, I}, DType::f32, kGpu);
  silu_gate_forward(want, gate_up);
  silu_gate_forward(got, on_gpu(gate_up));
  EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol);
}

TEST_F(CudaOps, CopyRowsMatchesCpu) {
  const Tensor src = random_tensor({9, 40}, 60);
  Tensor want = Tensor::zeros({9, 16}, DType::f32), got = Tensor::zeros({9, 16}, DType::f32, kGpu);
  const Tensor src_gpu = on_gpu(src);
  copy_rows(Device::cpu(), want.data<float>(), 16, src.data<float>() + 5, 40, 9, 12);
  copy_rows(kGpu, got.data<float>(), 16, src_gpu.data<float>() + 5, 40, 9, 12);
  EXPECT_EQ(scaled_error(on_cpu(got), want), 0.0);
}

// Key masks: 0 none, 1 right padding, 2 left padding, 3 a row of padding only (transformers'
// additive mask averages every value there), 4 holes in the middle.
Tensor key_mask(int64_t B, int64_t T, int pattern) {
  Tensor m = Tensor::empty({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t real = std::max<int64_t>(1, T - b * (T / 3 + 1));
      int v = 1;
      if (pattern == 1) v = t < real;
      if (pattern == 2) v = t >= T - real;
      if (pattern == 3) v = b == 1 ? 0 : t < real;
      if (pattern == 4) v = (t % 3) != 1 || t == 0;
      m.data<int32_t>()[b * T + t] = v;
    }
  return m;
}

struct AttentionCase {
  int64_t B, T, H, D;
  int mask;
};

class CudaAttention : public CudaOps, public ::testing::WithParamInterface<AttentionCase> {};

TEST_P(CudaAttention, MatchesCpu) {
  const AttentionCase c = GetParam();
  const int64_t C = c.H * c.D;
  // q, k, v as column blocks of one fused [B, T, 3C] buffer, as the encoder has them.
  const Tensor qkv = random_tensor({c.B, c.T, 3 * C}, 70 + unsigned(c.T));
  const Tensor qkv_gpu = on_gpu(qkv);
  const Tensor mask = c.mask ? key_mask(c.B, c.T, c.mask) : Tensor();
  const float scale = 1.0f / std::sqrt(float(c.D));
  Tensor want = Tensor::empty({c.B, c.T, C}, DType::f32), got = Tensor::empty({c.B, c.T, C}, DType::f32, kGpu);
  attention_forward(want, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask, int(c.H), scale);
  attention_forward(got, qkv_gpu.narrow(2, 0, C), qkv_gpu.narrow(2, C, C), qkv_gpu.narrow(2, 2 * C, C),
                    mask.defined() ? on_gpu(mask) : Tensor(), int(c.H), scale);
  EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaAttention,
                         ::testing::Values(AttentionCase{2, 7, 4, 4, 1}, AttentionCase{3, 1, 2, 8, 0},
                                           AttentionCase{3, 64, 12, 64, 1}, AttentionCase{3, 130, 12, 64, 2},
                                           AttentionCase{3, 33, 6, 32, 3}, AttentionCase{2, 200, 2, 128, 4},
                                           AttentionCase{2, 65, 4, 16, 1}, AttentionCase{2, 40, 3, 80, 0},
                                           AttentionCase{2, 40, 3, 96, 2}));

struct CausalCase {
  int64_t B, past, Tq, H, KVH, D;
  bool left_padded;
};

class CudaCausalAttention : public CudaOps, public ::testing::WithParamInterface<CausalCase> {};

// The key/value cache layout: [B, capacity, KVH*D], queries [B, Tq, H*D] of their own buffer.
TEST_P(CudaCausalAttention, MatchesCpu) {
  const CausalCase c = GetParam();
  const int64_t Tk = c.past + c.Tq, capacity = Tk + 3, KD = c.KVH * c.D, HD = c.H * c.D;
  const Tensor q = random_tensor({c.B, c.Tq, HD}, 80), k = random_tensor({c.B, capacity, KD}, 81),
               v = random_tensor({c.B, capacity, KD}, 82);
  Tensor mask = Tensor::zeros({c.B, capacity}, DType::i32);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t t = 0; t < Tk; ++t)  // row b starts with b pads (left padding), or none
      mask.data<int32_t>()[b * capacity + t] = c.left_padded ? t >= std::min(b, Tk - 1) : 1;
  CausalAttentionArgs a;
  a.B = c.B, a.Tq = c.Tq, a.past = c.past, a.H = c.H, a.KVH = c.KVH, a.D = c.D;
  a.ld_q = HD, a.ld_kv = KD, a.batch_stride_kv = capacity * KD, a.ld_out = HD, a.mask_stride = capacity;
  a.scale = 1.0f / std::sqrt(float(c.D));
  Tensor want = Tensor::empty({c.B, c.Tq, HD}, DType::f32);
  causal_attention_forward(want.data<float>(), q.data<float>(), k.data<float>(), v.data<float>(),
                           mask.data<int32_t>(), a);
  const Tensor qg = on_gpu(q), kg = on_gpu(k), vg = on_gpu(v), mg = on_gpu(mask);
  Tensor got = Tensor::empty({c.B, c.Tq, HD}, DType::f32, kGpu);
  a.device = kGpu;
  causal_attention_forward(got.data<float>(), qg.data<float>(), kg.data<float>(), vg.data<float>(),
                           mg.data<int32_t>(), a);
  EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaCausalAttention,
                         ::testing::Values(CausalCase{2, 0, 9, 4, 1, 8, false}, CausalCase{3, 0, 70, 14, 2, 64, true},
                                           CausalCase{3, 40, 1, 14, 2, 64, true}, CausalCase{2, 100, 5, 4, 4, 16, false},
                                           CausalCase{2, 0, 130, 8, 2, 128, true}, CausalCase{1, 300, 1, 4, 2, 32, false}));

struct LinearCase {
  DType compute;
  cpu::FusedActivation activation;
  bool bias;
  bool strided_x;
};

class CudaLinear : public CudaOps, public ::testing::WithParamInterface<LinearCase> {};

// f32 against the CPU's f32 GEMM within 1e-4 of the output's scale; bf16 and f16 against the
// CPU's f32 result within the input rounding (2^-8 and 2^-11 relative per input, summed over K
// terms of random sign: a few times 2^-8 * sqrt(K) / sqrt(K) of the scale, so 1e-2 and 2e-3).
TEST_P(CudaLinear, MatchesCpu) {
  const LinearCase c = GetParam();
  const int64_t M = 45, K = 96, N = 130, ld_x = c.strided_x ? 3 * K : K;
  const Tensor w = random_tensor({N, K}, 90, 0.1f), b = c.bias ? random_tensor({N}, 91) : Tensor();
  const Tensor x_store = random_tensor({M, ld_x}, 92);
  const Tensor x = x_store.narrow(1, 0, K);
  Linear cpu_linear(w, b, {Device::cpu(), DType::f32}, c.activation);
  Linear gpu_linear(w, b, {kGpu, c.compute}, c.activation);
  EXPECT_EQ(gpu_linear.device(), kGpu);
  Tensor want = Tensor::empty({M, N}, DType::f32), got = Tensor::empty({M, N}, DType::f32, kGpu);
  linear_forward(want, x.contiguous(), cpu_linear);
  const Tensor x_gpu = on_gpu(x_store).narrow(1, 0, K);
  linear_forward(got, x_gpu, gpu_linear);
  const double tol = c.compute == DType::f32 ? kReductionTol : c.compute == DType::f16 ? 2e-3 : 1e-2;
  EXPECT_LT(scaled_error(on_cpu(got), want), tol);
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, CudaLinear,
    ::testing::Values(LinearCase{DType::f32, cpu::FusedActivation::none, true, false},
                      LinearCase{DType::f32, cpu::FusedActivation::gelu_erf, true, true},
                      LinearCase{DType::f32, cpu::FusedActivation::relu, true, false},
                      LinearCase{DType::f32, cpu::FusedActivation::tanh, true, false},
                      LinearCase{DType::f32, cpu::FusedActivation::none, false, true},
                      LinearCase{DType::bf16, cpu::FusedActivation::gelu_erf, true, true},
                      LinearCase{DType::bf16, cpu::FusedActivation::none, false, false},
                      LinearCase{DType::f16, cpu::FusedActivation::relu, true, false}));

TEST_F(CudaOps, UnsupportedHeadSizeIsAClearError) {
  const int64_t B = 1, T = 4, H = 2, D = 12, C = H * D;
  const Tensor qkv = on_gpu(random_tensor({B, T, 3 * C}, 100));
  Tensor out = Tensor::empty({B, T, C}, DType::f32, kGpu);
  const std::string e = test::error_of(
      [&] { attention_forward(out, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), Tensor(), H, 1.f); });
  EXPECT_NE(e.find("head size 12"), std::string::npos) << e;
}

}  // namespace
}  // namespace tach::ops
