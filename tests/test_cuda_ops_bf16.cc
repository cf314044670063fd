// The element-wise, norm and data-movement ops on CUDA with bf16 and f16 activations (issue 49's
// contract), each against the CPU's f32 kernel on the same inputs rounded to the dtype first. The
// GPU computes in f32 from those values and rounds its output once; where transformers rounds an
// intermediate (the residual sum before a norm, an embedding sum after each add), the reference
// rounds it too, so what is left is the output's rounding and f32 noise. Skipped, saying why,
// without a CUDA device or backend.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/activation.h"
#include "ops/add.h"
#include "ops/cast.h"
#include "ops/copy_rows.h"
#include "ops/embedding.h"
#include "ops/gelu.h"
#include "ops/kv_append.h"
#include "ops/layer_norm.h"
#include "ops/masked_mean.h"
#include "ops/pooling.h"
#include "ops/rms_norm.h"
#include "ops/rope.h"
#include "ops/rope_kv_append.h"
#include "ops/silu_gate.h"
#include "cuda_compare.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::kGpu;
using test::kReductionTol;
using test::on_cpu;
using test::on_gpu;
using test::random_tensor;
using test::scaled_error;

class CudaOpsHalf : public test::CudaTest, public ::testing::WithParamInterface<DType> {};

// One ulp of the dtype relative to the output's scale: the output's one rounding costs at most
// half of it; the other half covers the f32 differences between the kernels (summation order,
// CUDA's erff/expf/tanhf against cpu/vec_math's), which are ~1e-6 and only matter where they
// straddle a rounding boundary.
double one_ulp(DType A) { return A == DType::bf16 ? 1.0 / 256 : 1.0 / 1024; }

// f32 → A → f32: the values an A tensor holds (core's rounding, independent of the ops tested).
Tensor rounded(const Tensor& f32, DType A) { return f32.to(A).to(DType::f32); }
// A device tensor in A holding f32's values rounded; and a device A tensor read back as f32.
Tensor gpu_in(const Tensor& f32, DType A) { return on_gpu(f32.to(A)); }
Tensor back(const Tensor& device_tensor) { return on_cpu(device_tensor).to(DType::f32); }

// Bitwise equality of two A tensors' bytes (moves and exact operations).
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.nbytes(), want.nbytes()) << what;
  EXPECT_EQ(0, std::memcmp(got.raw(), want.raw(), got.nbytes())) << what;
}

TEST_P(CudaOpsHalf, CastMatchesCpuBitForBit) {
  const DType A = GetParam();
  Tensor x = random_tensor({1000 + 7}, 1, 20.0f);  // not a multiple of the 8-element packs
  x.data<float>()[3] = 70000.0f;                   // past f16's range
  x.data<float>()[4] = 1e-6f;                      // an f16 subnormal
  const Tensor half = x.to(A);
  for (auto [from, to] : std::vector<std::pair<DType, DType>>{{DType::f32, A},
                                                              {A, DType::f32},
                                                              {A, A == DType::bf16 ? DType::f16 : DType::bf16},
                                                              {A, A}}) {
    const Tensor src = from == DType::f32 ? x : half;
    Tensor want = Tensor::empty(src.shape(), to), got = Tensor::empty(src.shape(), to, kGpu);
    cast(want, src);
    cast(got, on_gpu(src));
    expect_same_bits(on_cpu(got), want, std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
    // A view that starts off the packs' alignment takes the element path.
    Tensor got_view = Tensor::empty({int64_t(src.numel() - 1)}, to, kGpu);
    cast(got_view, on_gpu(src).narrow(0, 1, src.numel() - 1));
    expect_same_bits(on_cpu(got_view), want.narrow(0, 1, src.numel() - 1).contiguous(), "offset view");
  }
}

// Word + position embeddings, each add rounded to A as transformers' bf16 model adds them; the
// table f32 (the contract's parameters) or bf16 (a checkpoint's own dtype).
TEST_P(CudaOpsHalf, EmbeddingRoundsEachAdd) {
  const DType A = GetParam();
  const int64_t V = 50, C = 40, N = 33;
  Tensor ids = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) ids.data<int32_t>()[i] = int32_t((i * 7) % V);
  for (DType table_dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(dtype_name(table_dtype));
    const Tensor word = random_tensor({V, C}, 2).to(table_dtype), position = random_tensor({V, C}, 3).to(table_dtype);
    // The CPU in f32: the lookup, rounded; plus the second lookup, rounded. Both exact operations.
    Tensor want = Tensor::empty({N, C}, DType::f32);
    embedding_forward(want, ids, word, false);
    want = rounded(want, A);
    embedding_forward(want, ids, position, true);
    want = want.to(A);
    Tensor got = Tensor::empty({N, C}, A, kGpu);
    const Tensor ids_gpu = on_gpu(ids);
    embedding_forward(got, ids_gpu, on_gpu(word), false);
    embedding_forward(got, ids_gpu, on_gpu(position), true);
    expect_same_bits(on_cpu(got), want, "two lookups, each rounded once");
  }
}

// LayerNorm with the residual: transformers rounds x + residual to A, then normalises it in f32.
// The reference does the same on the CPU (the sum rounded, then the f32 kernel), so the GPU
// differs only by the output's rounding and the statistics' summation order.
TEST_P(CudaOpsHalf, LayerNormMatchesCpuOnTheRoundedSum) {
  const DType A = GetParam();
  for (int64_t C : {16, 384, 768, 1000}) {
    SCOPED_TRACE("C = " + std::to_string(C));
    const int64_t N = 37;
    const Tensor x = rounded(random_tensor({N, C}, 10), A), res = rounded(random_tensor({N, C}, 11, 3.0f), A);
    const Tensor g = random_tensor({C}, 12), b = random_tensor({C}, 13);
    for (bool with_residual : {false, true}) {
      Tensor sum = x.to(DType::f32);
      if (with_residual) {
        for (int64_t i = 0; i < N * C; ++i) sum.data<float>()[i] += res.data<float>()[i];
        sum = rounded(sum, A);
      }
      Tensor want = Tensor::empty({N, C}, DType::f32);
      layer_norm_forward(want, sum, Tensor(), g, b, 1e-12f);
      // In place on the residual, as the encoder writes h = LayerNorm(proj + h).
      Tensor got = gpu_in(with_residual ? res : x, A);
      layer_norm_forward(got, with_residual ? gpu_in(x, A) : got, with_residual ? got : Tensor(), on_gpu(g), on_gpu(b),
                         1e-12f);
      EXPECT_LT(scaled_error(back(got), want), one_ulp(A)) << (with_residual ? "with" : "without") << " residual";
    }
  }
}

// ModernBERT's pre-norm form: h += delta in A (h keeps the rounded sum, bit for bit), then the
// norm of it, with and without a bias.
TEST_P(CudaOpsHalf, PreLayerNormKeepsTheRoundedSum) {
  const DType A = GetParam();
  const int64_t N = 19, C = 768;
  const Tensor h = rounded(random_tensor({N, C}, 14), A), delta = rounded(random_tensor({N, C}, 15), A);
  const Tensor g = random_tensor({C}, 16), b = random_tensor({C}, 17);
  for (bool bias : {true, false}) {
    Tensor sum = h.to(DType::f32);
    for (int64_t i = 0; i < N * C; ++i) sum.data<float>()[i] += delta.data<float>()[i];
    const Tensor want_h = sum.to(A);
    sum = want_h.to(DType::f32);
    Tensor want = Tensor::empty({N, C}, DType::f32), unused = sum.to(DType::f32);
    pre_layer_norm_forward(want, unused, Tensor(), g, bias ? b : Tensor(), 1e-5f);
    Tensor got_h = gpu_in(h, A), got = Tensor::empty({N, C}, A, kGpu);
    pre_layer_norm_forward(got, got_h, gpu_in(delta, A), on_gpu(g), bias ? on_gpu(b) : Tensor(), 1e-5f);
    expect_same_bits(on_cpu(got_h), want_h, "h + delta rounded once");
    EXPECT_LT(scaled_error(back(got), want), one_ulp(A)) << (bias ? "with" : "without") << " bias";
  }
}

// Widths within the kernel's registers (896), past them (2500) and under one element per thread
// (7); with the residual add (h keeps the rounded sum) and without.
TEST_P(CudaOpsHalf, RmsNormMatchesCpuOnTheRoundedSum) {
  const DType A = GetParam();
  const int64_t N = 29;
  for (const int64_t C : {int64_t(896), int64_t(2500), int64_t(7)})
    for (const bool residual : {true, false}) {
      SCOPED_TRACE("C = " + std::to_string(C) + (residual ? " with residual" : ""));
      const Tensor h = rounded(random_tensor({N, C}, 20), A), w = random_tensor({C}, 22);
      const Tensor delta = residual ? rounded(random_tensor({N, C}, 21), A) : Tensor();
      Tensor sum = h.to(DType::f32);
      if (residual)
        for (int64_t i = 0; i < N * C; ++i) sum.data<float>()[i] += delta.data<float>()[i];
      const Tensor want_h = sum.to(A);
      sum = want_h.to(DType::f32);
      Tensor want = Tensor::empty({N, C}, DType::f32);
      rms_norm_forward(want, sum, Tensor(), w, 1e-6f);
      Tensor got_h = gpu_in(h, A), got = Tensor::empty({N, C}, A, kGpu);
      rms_norm_forward(got, got_h, residual ? gpu_in(delta, A) : Tensor(), on_gpu(w), 1e-6f);
      expect_same_bits(on_cpu(got_h), want_h, "h");
      EXPECT_LT(scaled_error(back(got), want), one_ulp(A));
    }
}

// Qwen3's and Gemma's per-head q/k norms in the fused buffer, from a column past 0.
TEST_P(CudaOpsHalf, RmsNormHeadsMatchesCpu) {
  const DType A = GetParam();
  const int64_t N = 9, D = 128, heads = 6, ld = 10 * D, col0 = D;
  const Tensor x = rounded(random_tensor({N, ld}, 23, 2.0f), A), w = random_tensor({D}, 24);
  Tensor want = x.to(DType::f32);
  rms_norm_heads_forward(want, col0, heads, D, w, 1e-6f);
  Tensor got = gpu_in(x, A);
  rms_norm_heads_forward(got, col0, heads, D, on_gpu(w), 1e-6f);
  EXPECT_LT(scaled_error(back(got), want), one_ulp(A));
  // The columns outside the heads are untouched, bit for bit.
  const Tensor got_host = on_cpu(got), x_half = x.to(A);
  const size_t element = dtype_bytes(A, 1);
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(0,
              std::memcmp(static_cast<const char*>(got_host.raw()) + size_t(n * ld) * element,
                          static_cast<const char*>(x_half.raw()) + size_t(n * ld) * element, size_t(col0) * element));
    const int64_t end = col0 + heads * D;
    EXPECT_EQ(0, std::memcmp(static_cast<const char*>(got_host.raw()) + size_t(n * ld + end) * element,
                             static_cast<const char*>(x_half.raw()) + size_t(n * ld + end) * element,
                             size_t(ld - end) * element));
  }
}

// The residual add rounds y + x once (torch's bf16 add), contiguous (aligned to the 8-element
// packs and not) and over strided rows: bit for bit the CPU's f32 sum rounded.
TEST_P(CudaOpsHalf, AddAndScaleRoundOnce) {
  const DType A = GetParam();
  const int64_t n = 4099;
  const Tensor y = rounded(random_tensor({n}, 30), A), x = rounded(random_tensor({n}, 31), A);
  Tensor want = y.to(DType::f32);
  add_inplace(want, x);
  Tensor got = gpu_in(y, A);
  add_inplace(got, gpu_in(x, A));
  expect_same_bits(on_cpu(got), want.to(A), "contiguous");
  Tensor got_off = gpu_in(y, A);
  add_inplace(got_off.narrow(0, 1, n - 1), gpu_in(x, A).narrow(0, 1, n - 1));
  expect_same_bits(on_cpu(got_off).narrow(0, 1, n - 1).contiguous(), want.to(A).narrow(0, 1, n - 1).contiguous(),
                   "off the packs' alignment");
  // Strided rows: the first token of each of B sequences of T rows.
  const int64_t B = 5, T = 7, C = 48;
  const Tensor h = rounded(random_tensor({B * T, C}, 32), A), d = rounded(random_tensor({B, C}, 33), A);
  Tensor want_rows = h.to(DType::f32);
  add_inplace(want_rows.reshape({B, T * C}).narrow(1, 0, C), d);
  Tensor got_rows = gpu_in(h, A);
  add_inplace(got_rows.reshape({B, T * C}).narrow(1, 0, C), gpu_in(d, A));
  expect_same_bits(on_cpu(got_rows), want_rows.to(A), "strided rows");
  // Gemma's embedding scale: the product in f32, rounded once.
  Tensor want_scaled = y.to(DType::f32);
  scale_inplace(want_scaled, 27.7128f);
  Tensor got_scaled = gpu_in(y, A);
  scale_inplace(got_scaled, 27.7128f);
  expect_same_bits(on_cpu(got_scaled), want_scaled.to(A), "scale");
}

// erf-GELU, tanh and ReLU: the CPU's formulas (cpu/vec_math) and CUDA's differ by f32 noise.
TEST_P(CudaOpsHalf, ActivationsMatchCpu) {
  const DType A = GetParam();
  const int64_t n = 3001;
  const Tensor x = rounded(random_tensor({n}, 40, 3.0f), A);
  for (const char* act : {"gelu", "tanh", "relu"}) {
    SCOPED_TRACE(act);
    auto run = [&](const Tensor& out, const Tensor& in) {
      if (std::string(act) == "gelu") gelu_forward(out, in);
      else if (std::string(act) == "tanh") tanh_forward(out, in);
      else relu_forward(out, in);
    };
    Tensor want = Tensor::empty({n}, DType::f32);
    run(want, x);
    Tensor got = gpu_in(x, A);
    run(got, got);  // in place, as the linear applies it after the GEMM
    EXPECT_LT(scaled_error(back(got), want), one_ulp(A));
  }
}

// SwiGLU, Gemma's tanh-GELU gate and ModernBERT's erf-GELU gate.
TEST_P(CudaOpsHalf, GatesMatchCpu) {
  const DType A = GetParam();
  const int64_t N = 17, I = 300;
  const Tensor gate_up = rounded(random_tensor({N, 2 * I}, 50, 3.0f), A);
  for (GateActivation act : {GateActivation::silu, GateActivation::gelu_tanh, GateActivation::gelu}) {
    SCOPED_TRACE(gate_op_name(act));
    Tensor want = Tensor::empty({N, I}, DType::f32), got = Tensor::empty({N, I}, A, kGpu);
    silu_gate_forward(want, gate_up, act);
    silu_gate_forward(got, gpu_in(gate_up, A), act);
    EXPECT_LT(scaled_error(back(got), want), one_ulp(A));
  }
}

// RoPE on q and k in the fused buffer; the values are untouched, bit for bit.
TEST_P(CudaOpsHalf, RopeMatchesCpu) {
  const DType A = GetParam();
  const int64_t N = 11, H = 4, KVH = 2, D = 64, ld = (H + 2 * KVH) * D;
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t i = 0; i < N; ++i) positions.data<int32_t>()[i] = int32_t(3 * i + 1);
  RopeSettings s;
  s.head_dim = D;
  s.theta = 1e6;
  const RopeTable table = rope_table(positions, rope_inverse_frequencies(s, 40));
  const RopeTable table_gpu{on_gpu(table.cos), on_gpu(table.sin)};
  const Tensor qkv = rounded(random_tensor({N, ld}, 60), A);
  Tensor want = qkv.to(DType::f32), got = gpu_in(qkv, A);
  rope_forward(want, H, KVH, D, table);
  rope_forward(got, H, KVH, D, table_gpu);
  EXPECT_LT(scaled_error(back(got), want), one_ulp(A));
  const Tensor got_values = back(got).narrow(1, (H + KVH) * D, KVH * D).contiguous();
  EXPECT_EQ(scaled_error(got_values, qkv.narrow(1, (H + KVH) * D, KVH * D).contiguous()), 0.0);
}

// The cache in A: the rows copied as they are, at a host length and at one read on the device.
TEST_P(CudaOpsHalf, KvAppendCopiesRowsAsTheyAre) {
  const DType A = GetParam();
  const int64_t B = 3, T = 5, capacity = 20, width = 24, ld = 100;
  const Tensor qkv = random_tensor({B, T, ld}, 70);
  KvAppendArgs a;
  a.B = B, a.T = T, a.past = 7, a.capacity = capacity, a.width = width, a.ld_qkv = ld, a.k_col = 40, a.v_col = 70;
  Tensor want_k = Tensor::zeros({B, capacity, width}, DType::f32),
         want_v = Tensor::zeros({B, capacity, width}, DType::f32);
  const Tensor qkv_rounded = rounded(qkv, A);
  kv_append(want_k.data<float>(), want_v.data<float>(), qkv_rounded.data<float>(), a);
  const Tensor qkv_gpu = gpu_in(qkv, A);
  for (const bool on_device : {false, true}) {
    Tensor k = Tensor::zeros({B, capacity, width}, A, kGpu), v = Tensor::zeros({B, capacity, width}, A, kGpu);
    Tensor past = Tensor::empty({1}, DType::i32);
    past.data<int32_t>()[0] = 7;
    const Tensor past_gpu = on_gpu(past);
    KvAppendArgs g = a;
    g.device = kGpu;
    g.dtype = A;
    if (on_device) g.device_past = past_gpu.data<int32_t>(), g.past = capacity - T;
    kv_append(k.raw(), v.raw(), qkv_gpu.raw(), g);
    expect_same_bits(on_cpu(k), want_k.to(A), on_device ? "k, length on the device" : "k");
    expect_same_bits(on_cpu(v), want_v.to(A), on_device ? "v, length on the device" : "v");
  }
}

// Decoding's fused RoPE and append against rope_forward then kv_append on the GPU: the same bits
// in the buffer (q and k rotated) and in the cache, at a host length and at one read on the device;
// f32 too (the fused op serves every activation dtype).
TEST_P(CudaOpsHalf, RopeKvAppendIsTheTwoOpsBitForBit) {
  const int64_t B = 3, T = 2, H = 4, KVH = 2, D = 16, capacity = 12;
  const int64_t ld = (H + 2 * KVH) * D, N = B * T;
  Tensor positions = Tensor::empty({N}, DType::i32);
  for (int64_t n = 0; n < N; ++n) positions.data<int32_t>()[n] = int32_t(3 + n % T);
  RopeSettings settings;
  settings.head_dim = D;
  const RopeTable host_table = rope_table(positions, settings, 16);
  const RopeTable table{on_gpu(host_table.cos), on_gpu(host_table.sin)};
  const Tensor qkv = random_tensor({N, ld}, 90);
  for (const DType A : {GetParam(), DType::f32}) {
    for (const bool on_device : {false, true}) {
      Tensor past = Tensor::empty({1}, DType::i32);
      past.data<int32_t>()[0] = 4;
      const Tensor past_gpu = on_gpu(past);
      KvAppendArgs a;
      a.B = B, a.T = T, a.past = 4, a.capacity = capacity, a.width = KVH * D, a.ld_qkv = ld;
      a.k_col = H * D, a.v_col = (H + KVH) * D, a.device = kGpu, a.dtype = A;
      if (on_device) a.device_past = past_gpu.data<int32_t>(), a.past = capacity - T;
      Tensor want_qkv = gpu_in(qkv, A), got_qkv = gpu_in(qkv, A);
      const auto cache = [&] { return Tensor::zeros({B, capacity, KVH * D}, A, kGpu); };
      Tensor want_k = cache(), want_v = cache(), got_k = cache(), got_v = cache();
      rope_forward(want_qkv, H, KVH, D, table);
      kv_append(want_k.raw(), want_v.raw(), want_qkv.raw(), a);
      rope_kv_append(got_qkv.raw(), got_k.raw(), got_v.raw(), a, H, D, table);
      const std::string what = std::string(dtype_name(A)) + (on_device ? ", length on the device" : "");
      expect_same_bits(on_cpu(got_qkv), on_cpu(want_qkv), "q|k|v, " + what);
      expect_same_bits(on_cpu(got_k), on_cpu(want_k), "k cache, " + what);
      expect_same_bits(on_cpu(got_v), on_cpu(want_v), "v cache, " + what);
    }
  }
}

// copy_rows over strided views, and gather/scatter by a device row list, in A.
TEST_P(CudaOpsHalf, RowsMoveAsTheyAre) {
  const DType A = GetParam();
  const int64_t B = 4, T = 6, C = 40;
  const Tensor h = random_tensor({B * T, C}, 80).to(A);
  Tensor want = Tensor::empty({B, C}, A);
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(static_cast<char*>(want.raw()) + size_t(b * C) * 2,
                static_cast<const char*>(h.raw()) + size_t(b * T * C) * 2, size_t(C) * 2);
  Tensor got = Tensor::empty({B, C}, A, kGpu);
  copy_rows(got, on_gpu(h).reshape({B, T * C}).narrow(1, 0, C));
  expect_same_bits(on_cpu(got), want, "first rows");
  Tensor rows = Tensor::empty({3}, DType::i32);
  rows.data<int32_t>()[0] = 5, rows.data<int32_t>()[1] = 0, rows.data<int32_t>()[2] = 23;
  const Tensor rows_gpu = on_gpu(rows);
  Tensor gathered = Tensor::empty({3, C}, A, kGpu);
  gather_rows(gathered, on_gpu(h), rows_gpu);
  Tensor want_gathered = Tensor::empty({3, C}, A);
  for (int64_t m = 0; m < 3; ++m)
    std::memcpy(static_cast<char*>(want_gathered.raw()) + size_t(m * C) * 2,
                static_cast<const char*>(h.raw()) + size_t(rows.data<int32_t>()[m] * C) * 2, size_t(C) * 2);
  expect_same_bits(on_cpu(gathered), want_gathered, "gathered");
  Tensor scattered = Tensor::zeros({B * T, C}, A, kGpu);
  scatter_rows(scattered, rows_gpu, gathered);
  const Tensor s = on_cpu(scattered);
  for (int64_t m = 0; m < 3; ++m)
    EXPECT_EQ(0, std::memcmp(static_cast<const char*>(s.raw()) + size_t(rows.data<int32_t>()[m] * C) * 2,
                             static_cast<const char*>(want_gathered.raw()) + size_t(m * C) * 2, size_t(C) * 2))
        << m;
}

// Pooling and the masked mean read A and write f32 (the heads stay f32): the same sums as the CPU's
// over the same (A) values, in double for pooling and in f32 token order for the masked mean.
TEST_P(CudaOpsHalf, PoolingReadsHalfAndWritesF32) {
  const DType A = GetParam();
  const int64_t B = 3, T = 9, C = 50;
  const Tensor hidden = rounded(random_tensor({B, T, C}, 90), A);
  Tensor mask = Tensor::empty({B, T}, DType::i32);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) mask.data<int32_t>()[b * T + t] = b == 1 ? t >= 3 : t < T - b * 2;
  const std::vector<PoolingMode> modes = {PoolingMode::cls,           PoolingMode::max,
                                          PoolingMode::mean,          PoolingMode::mean_sqrt_len,
                                          PoolingMode::weighted_mean, PoolingMode::last_token};
  const int64_t E = int64_t(modes.size()) * C;
  Tensor want = Tensor::empty({B, E}, DType::f32), got = Tensor::empty({B, E}, DType::f32, kGpu);
  pooling_forward(want, hidden, mask, modes);
  const Tensor hidden_gpu = gpu_in(hidden, A), mask_gpu = on_gpu(mask);
  pooling_forward(got, hidden_gpu, mask_gpu, modes);
  EXPECT_LT(scaled_error(on_cpu(got), want), 1e-6) << "the same values summed in double";
  Tensor want_mean = Tensor::empty({B, C}, DType::f32), got_mean = Tensor::empty({B, C}, DType::f32, kGpu);
  masked_mean_forward(want_mean, hidden, mask);
  masked_mean_forward(got_mean, hidden_gpu, mask_gpu);
  EXPECT_LT(scaled_error(on_cpu(got_mean), want_mean), kReductionTol) << "f32 sums in token order";
}

// A CUDA op given operands of two activation dtypes names both.
TEST_P(CudaOpsHalf, MixedDtypesOnTheGpuAreErrors) {
  const DType A = GetParam();
  Tensor x = Tensor::zeros({4, 8}, A, kGpu), y = Tensor::zeros({4, 8}, DType::f32, kGpu);
  const std::string e = test::error_of([&] { add_inplace(y, x); });
  EXPECT_NE(e.find("add: x is " + std::string(dtype_name(A)) + " but the call's activations are f32"),
            std::string::npos)
      << e;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaOpsHalf, ::testing::Values(DType::bf16, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& param) {
                           return std::string(dtype_name(param.param));
                         });

}  // namespace
}  // namespace tach::ops
