// Every op the models run, on the CPU and on CUDA with the same inputs, compared within a
// tolerance per dtype (ggml's test-backend-ops, in GoogleTest). The CPU kernels are themselves
// checked against double-precision references (test_ops, test_op_backward_double), so agreement
// here checks the CUDA kernels. Skipped, saying why, without a CUDA device or backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "ops/add.h"
#include "ops/argmax.h"
#include "ops/attention.h"
#include "ops/causal_attention.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/kv_append.h"
#include "ops/layer_norm.h"
#include "ops/linear.h"
#include "ops/pooling.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/silu_gate.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "cuda_compare.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::kElementwiseTol;
using test::kGpu;
using test::kReductionTol;
using test::on_cpu;
using test::on_gpu;
using test::poison;
using test::random_tensor;
using test::scaled_error;

class CudaOps : public test::CudaTest {};

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
      EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol)
          << (with_residual ? "with" : "without") << " residual";
    }
  }
}

// Widths within the kernel's registers (896), past them (2500: the tail is read again) and
// under one element per thread (7); with the residual add and without.
TEST_F(CudaOps, RmsNormWithResidualMatchesCpu) {
  const int64_t N = 29;
  for (const int64_t C : {int64_t(896), int64_t(2500), int64_t(7)})
    for (const bool residual : {true, false}) {
      Tensor h = random_tensor({N, C}, 20), w = random_tensor({C}, 22);
      const Tensor delta = residual ? random_tensor({N, C}, 21) : Tensor();
      Tensor h_gpu = on_gpu(h);
      Tensor want = Tensor::empty({N, C}, DType::f32), got = Tensor::empty({N, C}, DType::f32, kGpu);
      rms_norm_forward(want, h, delta, w, 1e-6f);
      poison(got);
      rms_norm_forward(got, h_gpu, residual ? on_gpu(delta) : Tensor(), on_gpu(w), 1e-6f);
      EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << C << (residual ? " with" : " without");
      EXPECT_LT(scaled_error(on_cpu(h_gpu), h), 1e-7) << "the residual stream h += delta, " << C;
    }
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

// Gemma's tanh-GELU gate and ModernBERT's erf-GELU gate.
TEST_F(CudaOps, GeluGatesMatchCpu) {
  const int64_t N = 13, I = 257;
  const Tensor gate_up = random_tensor({N, 2 * I}, 51, 3.0f);
  for (GateActivation act : {GateActivation::gelu_tanh, GateActivation::gelu}) {
    SCOPED_TRACE(gate_op_name(act));
    Tensor want = Tensor::empty({N, I}, DType::f32), got = Tensor::empty({N, I}, DType::f32, kGpu);
    silu_gate_forward(want, gate_up, act);
    silu_gate_forward(got, on_gpu(gate_up), act);
    EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol);
  }
}

// Qwen3's and Gemma's per-head q/k norms, in place on a column block of the fused qkv buffer.
TEST_F(CudaOps, RmsNormHeadsMatchesCpu) {
  const int64_t N = 21, H = 6, KVH = 2, D = 48, ld = (H + 2 * KVH) * D;
  const Tensor qkv = random_tensor({N, ld}, 23), wq = random_tensor({D}, 24), wk = random_tensor({D}, 25);
  Tensor want = qkv.to(DType::f32), got = on_gpu(qkv);
  rms_norm_heads_forward(want, 0, H, D, wq, 1e-6f);
  rms_norm_heads_forward(want, H * D, KVH, D, wk, 1e-6f);
  rms_norm_heads_forward(got, 0, H, D, on_gpu(wq), 1e-6f);
  rms_norm_heads_forward(got, H * D, KVH, D, on_gpu(wk), 1e-6f);
  EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << "v's columns must stay untouched too";
}

// ModernBERT's pre-norm LayerNorm: h += delta, out = LayerNorm(h), with and without a bias.
TEST_F(CudaOps, PreLayerNormMatchesCpu) {
  const int64_t N = 19, C = 768;
  const Tensor gamma = random_tensor({C}, 26), beta = random_tensor({C}, 27), delta = random_tensor({N, C}, 28);
  for (const bool with_delta : {false, true})
    for (const bool with_beta : {false, true}) {
      SCOPED_TRACE(std::string(with_delta ? "+delta" : "") + (with_beta ? " +beta" : ""));
      Tensor h = random_tensor({N, C}, 29), hg = on_gpu(h);
      Tensor want = Tensor::empty({N, C}, DType::f32), got = Tensor::empty({N, C}, DType::f32, kGpu);
      pre_layer_norm_forward(want, h, with_delta ? delta : Tensor(), gamma, with_beta ? beta : Tensor(), 1e-5f);
      pre_layer_norm_forward(got, hg, with_delta ? on_gpu(delta) : Tensor(), on_gpu(gamma),
                             with_beta ? on_gpu(beta) : Tensor(), 1e-5f);
      EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol);
      EXPECT_LT(scaled_error(on_cpu(hg), h), 1e-7) << "the residual stream h += delta";
    }
}

// The residual add and Gemma's embedding scale.
TEST_F(CudaOps, AddAndScaleMatchCpu) {
  Tensor y = random_tensor({1000}, 32), yg = on_gpu(y);
  const Tensor x = random_tensor({1000}, 33);
  add_inplace(y, x);
  add_inplace(yg, on_gpu(x));
  scale_inplace(y, 45.25f);
  scale_inplace(yg, 45.25f);
  EXPECT_EQ(scaled_error(on_cpu(yg), y), 0.0) << "one add and one multiply round alike";
}

// Every sentence-transformers pooling mode, concatenated, over right, left and all-padding rows;
// then the L2 normalisation.
TEST_F(CudaOps, PoolingAndNormalizeMatchCpu) {
  const int64_t B = 4, T = 37, C = 40;
  const Tensor hidden = random_tensor({B, T, C}, 34);
  for (int pattern : {0, 1, 2, 3}) {
    SCOPED_TRACE(pattern);
    const Tensor mask = key_mask(B, T, pattern);
    const std::vector<PoolingMode> modes = {PoolingMode::cls,           PoolingMode::max,
                                            PoolingMode::mean,          PoolingMode::mean_sqrt_len,
                                            PoolingMode::weighted_mean, PoolingMode::last_token};
    const int64_t E = int64_t(modes.size()) * C;
    Tensor want = Tensor::empty({B, E}, DType::f32), got = Tensor::empty({B, E}, DType::f32, kGpu);
    pooling_forward(want, hidden, mask, modes);
    pooling_forward(got, on_gpu(hidden), on_gpu(mask), modes);
    // max over an all-padding row is -inf on both sides: compared as equal.
    Tensor got_host = on_cpu(got);
    for (int64_t i = 0; i < want.numel(); ++i)
      if (std::isinf(want.data<float>()[i]) && got_host.data<float>()[i] == want.data<float>()[i])
        want.data<float>()[i] = got_host.data<float>()[i] = 0;
    EXPECT_LT(scaled_error(got_host, want), kElementwiseTol);
  }
  Tensor x = random_tensor({3, 300}, 35), xg = on_gpu(x);
  l2_normalize_forward(x);
  l2_normalize_forward(xg);
  EXPECT_LT(scaled_error(on_cpu(xg), x), kElementwiseTol);
}

TEST_F(CudaOps, CopyRowsMatchesCpu) {
  const Tensor src = random_tensor({9, 40}, 60);
  Tensor want = Tensor::zeros({9, 16}, DType::f32), got = Tensor::zeros({9, 16}, DType::f32, kGpu);
  const Tensor src_gpu = on_gpu(src);
  copy_rows(Device::cpu(), want.data<float>(), 16, src.data<float>() + 5, 40, 9, 12);
  copy_rows(kGpu, got.data<float>(), 16, src_gpu.data<float>() + 5, 40, 9, 12);
  EXPECT_EQ(scaled_error(on_cpu(got), want), 0.0);
}

// Both CUDA attention kernels on every case: the tiled one and one block per row (the launcher
// picks by grid size, so a test's small shapes would otherwise reach the rows kernel only).
constexpr CudaAttentionKernel kBothKernels[] = {CudaAttentionKernel::tiles, CudaAttentionKernel::rows};
class KernelChoice {
 public:
  explicit KernelChoice(CudaAttentionKernel k) : kernel_(k) { set_cuda_attention_kernel(k); }
  ~KernelChoice() { set_cuda_attention_kernel(CudaAttentionKernel::automatic); }
  KernelChoice(const KernelChoice&) = delete;
  KernelChoice& operator=(const KernelChoice&) = delete;
  const char* name() const { return kernel_ == CudaAttentionKernel::tiles ? "tiled kernel" : "rows kernel"; }

 private:
  CudaAttentionKernel kernel_;
};

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
  for (const CudaAttentionKernel kernel : kBothKernels) {
    const KernelChoice choice(kernel);
    attention_forward(got, qkv_gpu.narrow(2, 0, C), qkv_gpu.narrow(2, C, C), qkv_gpu.narrow(2, 2 * C, C),
                      mask.defined() ? on_gpu(mask) : Tensor(), int(c.H), scale);
    EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol) << choice.name();
  }
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
  int64_t window = 0;
  bool causal = true;  // false: ModernBERT's bidirectional layers (past 0)
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
  a.window = c.window, a.causal = c.causal;
  Tensor want = Tensor::empty({c.B, c.Tq, HD}, DType::f32);
  causal_attention_forward(want.data<float>(), q.data<float>(), k.data<float>(), v.data<float>(), mask.data<int32_t>(),
                           a);
  const Tensor qg = on_gpu(q), kg = on_gpu(k), vg = on_gpu(v), mg = on_gpu(mask);
  Tensor got = Tensor::empty({c.B, c.Tq, HD}, DType::f32, kGpu);
  a.device = kGpu;
  for (const CudaAttentionKernel kernel : kBothKernels) {
    const KernelChoice choice(kernel);
    causal_attention_forward(got.data<float>(), qg.data<float>(), kg.data<float>(), vg.data<float>(),
                             mg.data<int32_t>(), a);
    EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol) << choice.name();
  }
  if (!c.causal) return;
  // As a captured decoding step runs it: the length read on the device, the host's past only the
  // most it can be (which sizes the split of the keys: more splits than the keys fill).
  Tensor past = Tensor::empty({1}, DType::i32);
  past.data<int32_t>()[0] = int32_t(c.past);
  const Tensor past_gpu = on_gpu(past);
  a.device_past = past_gpu.data<int32_t>();
  a.past = capacity - c.Tq;
  poison(got);
  causal_attention_forward(got.data<float>(), qg.data<float>(), kg.data<float>(), vg.data<float>(), mg.data<int32_t>(),
                           a);
  EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol) << "length on the device";
}

// Decoding's shapes with long caches: the keys split over many blocks and merged.
TEST_F(CudaOps, SplitKeysDecodingMatchesCpu) {
  for (const int64_t past : {int64_t(1), int64_t(63), int64_t(1000), int64_t(4095)}) {
    const int64_t B = 2, H = 14, KVH = 2, D = 64, capacity = past + 1, KD = KVH * D, HD = H * D;
    const Tensor q = random_tensor({B, 1, HD}, 90), k = random_tensor({B, capacity, KD}, 91),
                 v = random_tensor({B, capacity, KD}, 92);
    Tensor mask = Tensor::zeros({B, capacity}, DType::i32);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < capacity; ++t) mask.data<int32_t>()[b * capacity + t] = t >= b * 3 || t == capacity - 1;
    CausalAttentionArgs a;
    a.B = B, a.Tq = 1, a.past = past, a.H = H, a.KVH = KVH, a.D = D;
    a.ld_q = HD, a.ld_kv = KD, a.batch_stride_kv = capacity * KD, a.ld_out = HD, a.mask_stride = capacity;
    a.scale = 0.125f;
    Tensor want = Tensor::empty({B, 1, HD}, DType::f32);
    causal_attention_forward(want.data<float>(), q.data<float>(), k.data<float>(), v.data<float>(),
                             mask.data<int32_t>(), a);
    const Tensor qg = on_gpu(q), kg = on_gpu(k), vg = on_gpu(v), mg = on_gpu(mask);
    Tensor got = Tensor::empty({B, 1, HD}, DType::f32, kGpu);
    a.device = kGpu;
    causal_attention_forward(got.data<float>(), qg.data<float>(), kg.data<float>(), vg.data<float>(),
                             mg.data<int32_t>(), a);
    EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol) << "past " << past;
  }
}

TEST_F(CudaOps, KvAppendMatchesCpuWithTheLengthOnTheDevice) {
  const int64_t B = 3, T = 5, capacity = 20, width = 24, ld = 100;
  const Tensor qkv = random_tensor({B, T, ld}, 95);
  KvAppendArgs a;
  a.B = B, a.T = T, a.past = 7, a.capacity = capacity, a.width = width, a.ld_qkv = ld, a.k_col = 40, a.v_col = 70;
  Tensor want_k = Tensor::zeros({B, capacity, width}, DType::f32),
         want_v = Tensor::zeros({B, capacity, width}, DType::f32);
  kv_append(want_k.data<float>(), want_v.data<float>(), qkv.data<float>(), a);
  const Tensor qkv_gpu = on_gpu(qkv);
  for (const bool on_device : {false, true}) {
    Tensor k = Tensor::zeros({B, capacity, width}, DType::f32, kGpu),
           v = Tensor::zeros({B, capacity, width}, DType::f32, kGpu);
    Tensor past = Tensor::empty({1}, DType::i32);
    past.data<int32_t>()[0] = 7;
    const Tensor past_gpu = on_gpu(past);
    KvAppendArgs g = a;
    g.device = kGpu;
    if (on_device) g.device_past = past_gpu.data<int32_t>(), g.past = capacity - T;
    kv_append(k.data<float>(), v.data<float>(), qkv_gpu.data<float>(), g);
    EXPECT_EQ(scaled_error(on_cpu(k), want_k), 0.0) << on_device;
    EXPECT_EQ(scaled_error(on_cpu(v), want_v), 0.0) << on_device;
  }
}

// Greedy decoding's argmax: a vocabulary's worth of logits, ties (the first wins), Gemma's softcap
// (which makes large logits equal after rounding), a row of one value.
TEST_F(CudaOps, ArgmaxRowsMatchesCpu) {
  const int64_t B = 4, V = 151936;
  Tensor logits = random_tensor({B, V}, 97, 3.0f);
  float* l = logits.data<float>();
  l[0 * V + 5000] = 50.0f, l[0 * V + 90000] = 50.0f;     // a tie: 5000
  l[1 * V + 151935] = 400.0f, l[1 * V + 7] = 300.0f;     // both 30.0f after a cap of 30: 7
  for (int64_t j = 0; j < V; ++j) l[3 * V + j] = -1.0f;  // all equal: 0
  for (const double cap : {0.0, 30.0}) {
    Tensor want = Tensor::empty({B}, DType::i32), got = Tensor::empty({B}, DType::i32, kGpu);
    argmax_rows(want, logits, cap);
    const Tensor logits_gpu = on_gpu(logits);
    argmax_rows(got, logits_gpu, cap);
    const Tensor host = on_cpu(got);
    for (int64_t b = 0; b < B; ++b)
      EXPECT_EQ(host.data<int32_t>()[b], want.data<int32_t>()[b]) << "row " << b << " cap " << cap;
    EXPECT_EQ(want.data<int32_t>()[0], 5000);
    EXPECT_EQ(want.data<int32_t>()[1], cap > 0 ? 7 : 151935);
    EXPECT_EQ(want.data<int32_t>()[3], 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaCausalAttention,
    ::testing::Values(CausalCase{2, 0, 9, 4, 1, 8, false}, CausalCase{3, 0, 70, 14, 2, 64, true},
                      CausalCase{3, 40, 1, 14, 2, 64, true}, CausalCase{2, 100, 5, 4, 4, 16, false},
                      CausalCase{2, 0, 130, 8, 2, 128, true}, CausalCase{1, 300, 1, 4, 2, 32, false},
                      // sliding windows (Mistral, Gemma), in a prompt and in decoding
                      CausalCase{3, 0, 70, 4, 2, 32, true, 4}, CausalCase{2, 90, 1, 4, 1, 64, false, 16},
                      // bidirectional (ModernBERT): global, then local windows where the
                      // first rows of a left-padded row see padding only
                      CausalCase{3, 0, 70, 4, 2, 64, true, 0, false}, CausalCase{4, 0, 9, 4, 2, 16, true, 1, false},
                      CausalCase{2, 0, 150, 6, 3, 32, true, 64, false}));

// MPNet's relative position bias on the encoder's scores: the same buckets and table on both sides.
TEST_F(CudaOps, AttentionWithRelativePositionBiasMatchesCpu) {
  const int64_t B = 3, T = 40, H = 4, D = 16, C = H * D, NB = 32;
  const Tensor qkv = random_tensor({B, T, 3 * C}, 71), table = random_tensor({NB, H}, 72);
  const std::vector<int32_t> b = relative_position_buckets(T, NB, 128);
  Tensor buckets = Tensor::empty({T, T}, DType::i32);
  std::copy(b.begin(), b.end(), buckets.data<int32_t>());
  const Tensor mask = key_mask(B, T, 1), qkv_gpu = on_gpu(qkv);
  const float scale = 1.0f / std::sqrt(float(D));
  Tensor want = Tensor::empty({B, T, C}, DType::f32), got = Tensor::empty({B, T, C}, DType::f32, kGpu);
  attention_forward(want, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask, int(H), scale, table,
                    buckets);
  for (const CudaAttentionKernel kernel : kBothKernels) {
    const KernelChoice choice(kernel);
    attention_forward(got, qkv_gpu.narrow(2, 0, C), qkv_gpu.narrow(2, C, C), qkv_gpu.narrow(2, 2 * C, C), on_gpu(mask),
                      int(H), scale, on_gpu(table), on_gpu(buckets));
    EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol) << choice.name();
  }
}

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
// 45 rows through cuBLASLt, 1 to 4 through the GEMV (decoding's rows), whose long rows (K 1024,
// 4104) are shared by 2 to 8 warps each; K = 90 is no multiple of 8, which sends even a few rows
// to cuBLASLt.
TEST_P(CudaLinear, MatchesCpu) {
  const LinearCase c = GetParam();
  for (const int64_t K : {int64_t(96), int64_t(90), int64_t(1024), int64_t(4104)})
    for (const int64_t M : {int64_t(45), int64_t(1), int64_t(2), int64_t(3), int64_t(4)}) {
      const int64_t N = 130, ld_x = c.strided_x ? 3 * K : K;
      const Tensor w = random_tensor({N, K}, 90, 0.1f), b = c.bias ? random_tensor({N}, 91) : Tensor();
      const Tensor x_store = random_tensor({M, ld_x}, 92);
      const Tensor x = x_store.narrow(1, 0, K);
      Linear cpu_linear(w, b, {Device::cpu(), DType::f32}, c.activation);
      Linear gpu_linear(w, b, {kGpu, c.compute}, c.activation);
      EXPECT_EQ(gpu_linear.device(), kGpu);
      Tensor want = Tensor::empty({M, N}, DType::f32), got = Tensor::empty({M, N}, DType::f32, kGpu);
      linear_forward(want, x.contiguous(), cpu_linear);
      const Tensor x_gpu = on_gpu(x_store).narrow(1, 0, K);
      poison(got);
      linear_forward(got, x_gpu, gpu_linear);
      const double tol = c.compute == DType::f32 ? kReductionTol : c.compute == DType::f16 ? 2e-3 : 1e-2;
      EXPECT_LT(scaled_error(on_cpu(got), want), tol) << M << " rows, K " << K;
    }
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaLinear,
                         ::testing::Values(LinearCase{DType::f32, cpu::FusedActivation::none, true, false},
                                           LinearCase{DType::f32, cpu::FusedActivation::gelu_erf, true, true},
                                           LinearCase{DType::f32, cpu::FusedActivation::relu, true, false},
                                           LinearCase{DType::f32, cpu::FusedActivation::tanh, true, false},
                                           LinearCase{DType::f32, cpu::FusedActivation::none, false, true},
                                           LinearCase{DType::bf16, cpu::FusedActivation::gelu_erf, true, true},
                                           LinearCase{DType::bf16, cpu::FusedActivation::none, false, false},
                                           LinearCase{DType::f16, cpu::FusedActivation::relu, true, false}));

// An LM head's shape: more columns than one wave of blocks holds, so each warp loops over several.
TEST_F(CudaOps, GemvOverManyColumnsMatchesCpu) {
  const int64_t N = 20000, K = 256;
  const Tensor w = random_tensor({N, K}, 96, 0.1f), x = random_tensor({2, K}, 97);
  for (const DType compute : {DType::f32, DType::bf16}) {
    Linear cpu_linear(w, Tensor(), {Device::cpu(), DType::f32});
    Linear gpu_linear(w, Tensor(), {kGpu, compute});
    Tensor want = Tensor::empty({2, N}, DType::f32), got = Tensor::empty({2, N}, DType::f32, kGpu);
    linear_forward(want, x, cpu_linear);
    poison(got);
    linear_forward(got, on_gpu(x), gpu_linear);
    EXPECT_LT(scaled_error(on_cpu(got), want), compute == DType::f32 ? kReductionTol : 1e-2) << dtype_name(compute);
  }
}

// --allow-tf32: cuBLASLt rounds x and W to TF32, whose 10 explicit mantissa bits leave each input
// within 2^-11 (round to nearest) or 2^-10 (truncation) of its f32 value, so each product within
// about 2^-9 relative. Over K terms of random sign the errors add like the terms themselves, so
// the output is off by about that fraction of its scale: 4 * 2^-10 (3.9e-3) bounds it with room,
// and TF32's error, far above f32's summation-order error (kReductionTol), shows the mode ran. The
// few-row GEMV of decoding reads f32 and stays within f32's tolerance.
TEST_F(CudaOps, Tf32LinearIsWithinTf32OfTheCpuAndDiffersFromF32) {
  const int64_t N = 256, K = 1024;
  const Tensor w = random_tensor({N, K}, 110, 0.1f), b = random_tensor({N}, 111);
  Linear cpu_linear(w, b, {Device::cpu(), DType::f32});
  Linear f32_linear(w, b, {kGpu, DType::f32});
  Linear tf32_linear(w, b, {kGpu, DType::f32, false, true});
  EXPECT_TRUE(tf32_linear.tf32());
  for (const int64_t M : {int64_t(64), int64_t(2)}) {
    SCOPED_TRACE(M);
    const Tensor x = random_tensor({M, K}, 112);
    Tensor want = Tensor::empty({M, N}, DType::f32), strict = Tensor::empty({M, N}, DType::f32, kGpu),
           tf32 = Tensor::empty({M, N}, DType::f32, kGpu);
    linear_forward(want, x, cpu_linear);
    poison(strict);
    poison(tf32);
    linear_forward(strict, on_gpu(x), f32_linear);
    linear_forward(tf32, on_gpu(x), tf32_linear);
    const Tensor strict_host = on_cpu(strict), tf32_host = on_cpu(tf32);
    EXPECT_LT(scaled_error(strict_host, want), kReductionTol);
    if (M == 2) {  // the GEMV's rows: f32 arithmetic, as the compute note says
      EXPECT_LT(scaled_error(tf32_host, want), kReductionTol);
      continue;
    }
    const double tf32_error = scaled_error(tf32_host, want);
    EXPECT_LT(tf32_error, 4.0 / 1024) << "TF32's rounding bounds the error";
    EXPECT_GT(scaled_error(tf32_host, strict_host), kReductionTol) << "the GEMM did not run in TF32";
  }
}

TEST_F(CudaOps, UnsupportedHeadSizeIsAClearError) {
  const int64_t B = 1, T = 4, H = 2, D = 320, C = H * D;
  const Tensor qkv = on_gpu(random_tensor({B, T, 3 * C}, 100));
  Tensor out = Tensor::empty({B, T, C}, DType::f32, kGpu);
  const std::string e = test::error_of([&] {
    attention_forward(out, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), Tensor(), H, 1.f);
  });
  EXPECT_NE(e.find("head size 320"), std::string::npos) << e;
}

// Head sizes the tiled kernel has no instantiation for (12; Gemma's 256) run on the rows kernel.
TEST_F(CudaOps, AnyHeadSizeUpTo256Runs) {
  for (const int64_t D : {12, 256}) {
    SCOPED_TRACE(D);
    const int64_t B = 2, T = 9, H = 2, C = H * D;
    const Tensor qkv = random_tensor({B, T, 3 * C}, 101), mask = key_mask(B, T, 1), qkv_gpu = on_gpu(qkv);
    Tensor want = Tensor::empty({B, T, C}, DType::f32), got = Tensor::empty({B, T, C}, DType::f32, kGpu);
    attention_forward(want, qkv.narrow(2, 0, C), qkv.narrow(2, C, C), qkv.narrow(2, 2 * C, C), mask, int(H), 0.1f);
    attention_forward(got, qkv_gpu.narrow(2, 0, C), qkv_gpu.narrow(2, C, C), qkv_gpu.narrow(2, 2 * C, C), on_gpu(mask),
                      int(H), 0.1f);
    EXPECT_LT(scaled_error(on_cpu(got), want), kReductionTol);
  }
}

}  // namespace
}  // namespace tach::ops
