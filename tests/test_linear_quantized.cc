// The inference linear's parts that run on the host: the weight-only int8/NF4 packing a GPU
// layer is loaded with (ops/linear_quantized.h), the activation-dtype rules of ops::Linear, and
// its declared costs. The GPU kernels that read these are checked in test_cuda_linear.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "cpu/nf4.h"
#if TACH_HAS_CUDA
#include "cuda/gemv.h"
#include "cuda/quant_gemv.h"
#endif
#include "ops/linear.h"
#include "ops/linear_quantized.h"
#include "ops/silu_gate.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::error_of;
using test::random_normal;

// Per output row: the scale is max|w| / 127, every code within [-127, 127], code · scale within
// half a step of the weight, and the row's largest weight lands on ±127 exactly.
TEST(LinearQuantized, Int8PacksEachRowSymmetricallyOnTheFullRange) {
  const int64_t N = 7, K = 40;
  Tensor w = random_normal(N, K, 3, 0.2f);
  w.data<float>()[2 * K + 5] = 0;  // a row may hold zeros; a row of only zeros gets scale 0
  std::fill(w.data<float>() + 4 * K, w.data<float>() + 5 * K, 0.0f);
  const QuantizedWeight q = quantize_int8_weight(w);
  ASSERT_EQ(q.codes.dtype(), DType::i8);
  ASSERT_EQ(q.codes.numel(), N * K);
  ASSERT_EQ(q.scales.numel(), N);
  const Tensor back = dequantize_weight(q, DType::i8, N, K);
  for (int64_t n = 0; n < N; ++n) {
    const float* row = w.data<float>() + n * K;
    float absmax = 0;
    for (int64_t k = 0; k < K; ++k) absmax = std::max(absmax, std::fabs(row[k]));
    const float scale = q.scales.data<float>()[n];
    EXPECT_FLOAT_EQ(scale, absmax / 127) << "row " << n;
    int biggest = 0;
    for (int64_t k = 0; k < K; ++k) {
      const int code = q.codes.data<int8_t>()[n * K + k];
      EXPECT_LE(std::abs(code), 127);
      biggest = std::max(biggest, std::abs(code));
      EXPECT_EQ(back.data<float>()[n * K + k], float(code) * scale);
      EXPECT_LE(std::fabs(back.data<float>()[n * K + k] - row[k]), 0.5f * scale * (1 + 1e-5f)) << n << ", " << k;
    }
    EXPECT_EQ(biggest, absmax > 0 ? 127 : 0) << "row " << n;
  }
}

// The same codes and absmax values as the CPU's NF4 (bitsandbytes' layout), and the dequantized
// weight equal bit for bit to the CPU's dequantize_nf4_rows.
TEST(LinearQuantized, Nf4PacksAsTheCpuQuantizerWithEachBlocksAbsmaxInF32) {
  for (const int64_t K : {int64_t(128), int64_t(96)}) {  // 96: blocks straddle rows
    const int64_t N = 6;
    const Tensor w = random_normal(N, K, 5, 0.05f);
    const QuantizedWeight q = quantize_nf4_weight(w);
    const cpu::Nf4Tensor want = cpu::quantize_nf4(w.data<float>(), N, K);
    ASSERT_EQ(q.codes.nbytes(), size_t(N * K / 2));
    EXPECT_EQ(std::memcmp(q.codes.raw(), want.codes.raw(), size_t(N * K / 2)), 0);
    ASSERT_EQ(q.scales.numel(), N * K / 64);
    std::vector<float> absmax(size_t(N * K / 64));
    want.absmax(absmax.data());
    for (int64_t b = 0; b < N * K / 64; ++b) EXPECT_EQ(q.scales.data<float>()[b], absmax[size_t(b)]) << "block " << b;
    std::vector<float> dq(size_t(N * K));
    cpu::dequantize_nf4_rows(want, 0, N, dq.data());
    const Tensor back = dequantize_weight(q, DType::nf4, N, K);
    for (int64_t i = 0; i < N * K; ++i)
      EXPECT_EQ(back.data<float>()[i], dq[size_t(i)]) << "K " << K << ", element " << i;
  }
}

TEST(LinearQuantized, Nf4RefusesAWeightThatIsNotWholeBlocks) {
  const std::string e = error_of([] { quantize_nf4_weight(random_normal(3, 30, 1)); });
  EXPECT_NE(e.find("blocks of 64"), std::string::npos) << e;
  const std::string not_quantized = error_of([] { dequantize_weight(QuantizedWeight{}, DType::bf16, 1, 1); });
  EXPECT_NE(not_quantized.find("bf16 is not a quantized dtype"), std::string::npos) << not_quantized;
}

// On the CPU every layer's activations are f32, whatever its weights.
TEST(LinearActivationDtype, IsF32OnTheCpuForEveryComputeDtype) {
  const Tensor w = random_normal(8, 64, 2, 0.1f);
  for (const DType compute : {DType::f32, DType::bf16, DType::i8, DType::nf4}) {
    const Linear layer(w, Tensor(), {Device::cpu(), compute});
    EXPECT_EQ(layer.activation_dtype(), DType::f32) << dtype_name(compute);
  }
}

// A bf16 x on the CPU is the op's unsupported-dtype error; mixed x and out dtypes name both.
TEST(LinearActivationDtype, TheCpuRefusesAnyOtherActivationDtypeByName) {
  const Linear layer(random_normal(8, 16, 2, 0.1f), Tensor(), {Device::cpu(), DType::f32});
  const Tensor x16 = Tensor::zeros({2, 16}, DType::bf16);
  Tensor out16 = Tensor::empty({2, 8}, DType::bf16), out32 = Tensor::empty({2, 8}, DType::f32);
  std::string e = error_of([&] { linear_forward(out16, x16, layer); });
  EXPECT_NE(e.find("linear: no kernel for device cpu with dtype bf16"), std::string::npos) << e;
  e = error_of([&] { linear_forward(out32, x16, layer); });
  EXPECT_NE(e.find("x is bf16 and out f32"), std::string::npos) << e;
}

// tanh-GELU (gelu_pytorch_tanh, gelu_new) on every CPU path: oneDNN's post-op (f32, bf16), tach's
// panels (f32 for decoding), int8's and NF4's epilogues, each against the same layer without an
// activation and torch's formula in double. oneDNN's tanh and std::tanh differ by a few f32 ulps:
// 1e-5 of the outputs' scale.
TEST(LinearTanhGelu, EveryCpuPathComputesTorchsTanhApproximation) {
  const int64_t N = 40, K = 64;
  const Tensor w = random_normal(N, K, 12, 0.2f), b = random_normal(1, N, 13).reshape({N});
  for (const int64_t M : {int64_t(2), int64_t(33)})
    for (const DType compute : {DType::f32, DType::bf16, DType::i8, DType::nf4})
      for (const bool decoding : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(compute)) + (decoding ? ", decoding" : "") + ", " + std::to_string(M) +
                     " rows");
        const Tensor x = random_normal(M, K, 14);
        const Linear plain(w, b, {Device::cpu(), compute, decoding});
        const Linear gelu(w, b, {Device::cpu(), compute, decoding}, cpu::FusedActivation::gelu_tanh);
        Tensor pre = Tensor::empty({M, N}, DType::f32), got = Tensor::empty({M, N}, DType::f32);
        linear_forward(pre, x, plain);
        linear_forward(got, x, gelu);
        double worst = 0, scale = 1e-6;
        for (int64_t i = 0; i < M * N; ++i) {
          const double v = pre.data<float>()[i];
          const double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
          worst = std::max(worst, std::fabs(got.data<float>()[i] - want));
          scale = std::max(scale, std::fabs(want));
        }
        EXPECT_LT(worst / scale, 1e-5);
      }
}

// x and y at the activation dtype's size, the weight at the compute dtype's, packed with its
// scales for int8 (one f32 per row) and NF4 (one f32 per 64 weights).
TEST(LinearCost, CountsActivationsAtTheirDtypeAndQuantizedWeightsPacked) {
  const int64_t M = 3, N = 128, K = 256;
  const OpCost f32 = linear_cost(M, N, K, DType::f32, true);
  EXPECT_EQ(f32.bytes_read, double(M * K * 4 + N * K * 4 + N * 4));
  EXPECT_EQ(f32.bytes_written, double(M * N * 4));
  const OpCost bf16 = linear_cost(M, N, K, DType::bf16, true, DType::bf16);
  EXPECT_EQ(bf16.bytes_read, double(M * K * 2 + N * K * 2 + N * 4));
  EXPECT_EQ(bf16.bytes_written, double(M * N * 2));
  EXPECT_EQ(bf16.flops, f32.flops);
  const OpCost i8 = linear_cost(M, N, K, DType::i8, false, DType::bf16);
  EXPECT_EQ(i8.bytes_read, double(M * K * 2 + N * K + N * 4));
  const OpCost nf4 = linear_cost(M, N, K, DType::nf4, false, DType::bf16);
  EXPECT_EQ(nf4.bytes_read, double(M * K * 2 + N * K / 2 + N * K / 64 * 4));
}

// The gated down projection's cost: the linear's over I inputs, with gate|up [M, 2I] read where
// act [M, I] was and the gate's arithmetic (silu_gate_cost's) added.
TEST(LinearCost, TheGatedDownCountsGateUpAndTheGatesArithmetic) {
  const int64_t M = 2, N = 96, I = 320;
  const OpCost plain = linear_cost(M, N, I, DType::bf16, true, DType::bf16);
  const OpCost gated = linear_gated_cost(M, N, I, DType::bf16, true, DType::bf16);
  EXPECT_EQ(gated.flops, plain.flops + silu_gate_cost(M, I, DType::bf16).flops);
  EXPECT_EQ(gated.bytes_read, plain.bytes_read + double(M * I * 2));
  EXPECT_EQ(gated.bytes_written, plain.bytes_written);
}

// On the CPU the gated down is the gate op then the linear (no GEMV to fuse into): the same
// bytes as the two calls, the act buffer written when given; wrong shapes are errors naming them.
TEST(LinearGated, OnTheCpuItIsTheGateOpThenTheLinear) {
  const int64_t M = 3, N = 40, I = 64;
  const Linear layer(random_normal(N, I, 41, 0.1f), Tensor(), {Device::cpu(), DType::f32});
  const Tensor gate_up = random_normal(M, 2 * I, 42);
  for (const GateActivation gate : {GateActivation::silu, GateActivation::gelu_tanh, GateActivation::gelu}) {
    Tensor act = Tensor::empty({M, I}, DType::f32), want = Tensor::empty({M, N}, DType::f32);
    silu_gate_forward(act, gate_up, gate);
    linear_forward(want, act, layer);
    Tensor scratch = Tensor::zeros({M, I}, DType::f32), got = Tensor::empty({M, N}, DType::f32);
    linear_forward_gated(got, gate_up, layer, gate, &scratch);
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << gate_op_name(gate);
    EXPECT_EQ(std::memcmp(scratch.raw(), act.raw(), act.nbytes()), 0) << gate_op_name(gate);
    Tensor again = Tensor::empty({M, N}, DType::f32);
    linear_forward_gated(again, gate_up, layer, gate);  // act allocated inside
    EXPECT_EQ(std::memcmp(again.raw(), want.raw(), want.nbytes()), 0) << gate_op_name(gate);
  }
  Tensor out = Tensor::empty({M, N}, DType::f32);
  const Tensor narrow_gate_up = random_normal(M, I, 43);  // [M, I]: no up half
  const std::string width = error_of([&] { linear_forward_gated(out, narrow_gate_up, layer, GateActivation::silu); });
  EXPECT_NE(width.find("gate_up"), std::string::npos) << width;
  EXPECT_NE(width.find("[M, 128]"), std::string::npos) << width;
  Tensor short_out = Tensor::empty({M, N - 1}, DType::f32);
  const std::string rows = error_of([&] { linear_forward_gated(short_out, gate_up, layer, GateActivation::silu); });
  EXPECT_NE(rows.find("out"), std::string::npos) << rows;
  EXPECT_NE(rows.find("[3, 40]"), std::string::npos) << rows;
}

#if TACH_HAS_CUDA
// Which calls the GPU's GEMVs take, decided on the host (no GPU needed): the rows, K's multiple
// (a 16-byte load of x or of codes must not cross a row), the activation dtype, and alignment.
TEST(LinearGemvRules, TheGemvsTakeOnlyShapesTheirLoadsFit) {
  const void* aligned = reinterpret_cast<const void*>(uintptr_t(4096));
  const void* off = reinterpret_cast<const void*>(uintptr_t(4096 + 8));
  cuda::GemvArgs g;
  g.M = 2, g.N = 64, g.K = 256, g.ld_x = 256, g.ld_y = 64, g.weights = cuda::GemvWeights::bf16;
  g.activation = DType::bf16;
  EXPECT_TRUE(cuda::gemv_fits(g, aligned, aligned));
  EXPECT_FALSE(cuda::gemv_fits(g, off, aligned)) << "x not 16-byte aligned";
  g.ld_x = 260;  // a 16-bit row that starts mid-load
  EXPECT_FALSE(cuda::gemv_fits(g, aligned, aligned));
  g.ld_x = 256, g.activation = DType::f16;
  EXPECT_FALSE(cuda::gemv_fits(g, aligned, aligned)) << "f16 x with bf16 weights";
  g.activation = DType::f32, g.ld_x = 260;
  EXPECT_TRUE(cuda::gemv_fits(g, aligned, aligned)) << "f32 rows need 4-value alignment only";
  g.M = 5;
  EXPECT_FALSE(cuda::gemv_fits(g, aligned, aligned));
  g.M = 2, g.activation = DType::bf16, g.ld_x = 256, g.gate = cuda::GemvGate::silu;
  EXPECT_FALSE(cuda::gemv_fits(g, aligned, aligned)) << "a gate's rows hold gate|up: 2K values";
  g.ld_x = 512;
  EXPECT_TRUE(cuda::gemv_fits(g, aligned, aligned));
  g.gate = cuda::GemvGate::none;

  cuda::QuantGemvArgs q;
  q.M = 1, q.N = 64, q.K = 96, q.ld_x = 96, q.ld_y = 64, q.weights = cuda::QuantWeights::int8;
  EXPECT_TRUE(cuda::quant_gemv_fits(q, aligned, aligned)) << "int8: K a multiple of 16";
  q.weights = cuda::QuantWeights::nf4;
  EXPECT_FALSE(cuda::quant_gemv_fits(q, aligned, aligned)) << "nf4: each row whole 64-blocks";
  q.K = q.ld_x = 128;
  EXPECT_TRUE(cuda::quant_gemv_fits(q, aligned, aligned));
  q.activation = DType::f16;
  EXPECT_FALSE(cuda::quant_gemv_fits(q, aligned, aligned)) << "quantized weights take bf16 or f32 x";
  q.activation = DType::bf16, q.M = 5;
  EXPECT_FALSE(cuda::quant_gemv_fits(q, aligned, aligned));
  q.M = 1, q.gate = cuda::GemvGate::gelu;
  EXPECT_FALSE(cuda::quant_gemv_fits(q, aligned, aligned)) << "a gate's rows hold gate|up: 2K values";
  q.ld_x = 2 * q.K;
  EXPECT_TRUE(cuda::quant_gemv_fits(q, aligned, aligned));
}

// Refused before anything is launched, naming what is wrong.
TEST(LinearGemvRules, WrongDtypesAreErrorsBeforeAnyLaunch) {
  cuda::QuantGemvArgs q;
  q.M = 1, q.N = 8, q.K = 64, q.ld_x = 64, q.ld_y = 8, q.activation = DType::f16;
  std::string e = error_of([&] { cuda::quant_gemv(0, nullptr, nullptr, nullptr, nullptr, nullptr, q); });
  EXPECT_NE(e.find("activations in f16"), std::string::npos) << e;
  cuda::GemvArgs g;
  g.M = 1, g.N = 8, g.K = 64, g.weights = cuda::GemvWeights::f32, g.activation = DType::bf16;
  e = error_of([&] { cuda::gemv(0, nullptr, nullptr, nullptr, nullptr, g); });
  EXPECT_NE(e.find("bf16 activations with these weights"), std::string::npos) << e;
  e = error_of([] { linear_activation_cuda(0, nullptr, DType::i32, 1, 1, 1, cpu::FusedActivation::gelu_erf); });
  EXPECT_NE(e.find("y in i32"), std::string::npos) << e;
  e = error_of([] { linear_activation_cuda(0, nullptr, DType::bf16, 1, 1, 1, cpu::FusedActivation::relu); });
  EXPECT_NE(e.find("ReLU is its epilogue"), std::string::npos) << e;
}
#endif

}  // namespace
}  // namespace tach::ops
