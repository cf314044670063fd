// The inference linear on CUDA with bf16/f16 activations and with weight-only int8/NF4 weights,
// against the CPU's f32 linear on the same inputs: x rounded to the activation dtype first, and
// for int8/NF4 the weight the GPU dequantizes (ops/linear_quantized.h's dequantize_weight), so
// that what remains is the GPU's own rounding. Skipped, saying why, without a CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ops/linear.h"
#include "ops/linear_quantized.h"
#include "ops/silu_gate.h"
#include "tach/error.h"
#include "cuda_compare.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::kGpu;
using test::on_cpu;
using test::on_gpu;
using test::random_tensor;
using test::scaled_error;

class CudaLinearDtypes : public test::CudaTest {};

// Unit roundoff: the largest relative error of rounding to nearest (2^-p for p significant bits).
constexpr double kBf16Roundoff = 1.0 / 256, kF16Roundoff = 1.0 / 2048;

// t rounded to dtype and back to f32 (what a kernel reading t in dtype sees).
Tensor rounded(const Tensor& t, DType dtype) { return t.to(dtype).to(DType::f32); }

// y [M, N] in `activation` on the GPU, from x (f32 on the host) rounded to it.
Tensor run_gpu(const Linear& layer, const Tensor& x, DType activation, int64_t ld_x_factor = 1) {
  const int64_t M = x.size(0), K = x.size(1), N = layer.out_features();
  Tensor store = Tensor::zeros({M, K * ld_x_factor}, DType::f32);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) store.data<float>()[m * K * ld_x_factor + k] = x.data<float>()[m * K + k];
  const Tensor x_gpu = on_gpu(store.to(activation)).narrow(1, 0, K);
  Tensor y = Tensor::empty({M, N}, activation, kGpu);
  linear_forward(y, x_gpu, layer);
  return on_cpu(y).to(DType::f32);
}

// The CPU's f32 linear on (weight, bias, act) with x as given.
Tensor run_cpu(const Tensor& w, const Tensor& b, cpu::FusedActivation act, const Tensor& x) {
  const Linear layer(w, b, {Device::cpu(), DType::f32}, act);
  Tensor y = Tensor::empty({x.size(0), w.size(0)}, DType::f32);
  linear_forward(y, x, layer);
  return y;
}

struct DtypeCase {
  DType compute;
  cpu::FusedActivation activation;
  bool bias;
};

class CudaLinearActivations : public CudaLinearDtypes, public ::testing::WithParamInterface<DtypeCase> {};

// x and y in bf16/f16 through the GEMV (1 to 4 rows) and cuBLASLt (45 rows, and K = 90, no
// multiple of 8, for every row count), rows of x strided or not. The reference is the CPU's f32
// linear on the same rounded x and W, so the GPU's error is its output rounding: half a unit in
// the last place of y (u = 2^-8 of |y| for bf16, 2^-11 for f16), the bias rounded to y's dtype in the
// GEMM's epilogue (the same again, of |b| <= the outputs' scale), an activation computed on the
// rounded pre-activation (GELU's slope is at most 1.13: once more), and f32 summation order
// (1e-4). Within 4 unit roundoffs u (2^-8 for bf16's 8 significant bits, 2^-11 for f16's 11):
// 1.6e-2 and 2e-3, with the f32 term added.
TEST_P(CudaLinearActivations, MatchesTheCpuOnTheSameRoundedInputs) {
  const DtypeCase c = GetParam();
  const DType a = c.compute;
  for (const int64_t K : {int64_t(96), int64_t(90), int64_t(1024), int64_t(4104)})
    for (const int64_t M : {int64_t(45), int64_t(1), int64_t(2), int64_t(3), int64_t(4)})
      for (const int64_t stride : {int64_t(1), int64_t(3)}) {
        SCOPED_TRACE(std::to_string(M) + " rows, K " + std::to_string(K) + ", x stride " + std::to_string(stride));
        const int64_t N = 130;
        const Tensor w = random_tensor({N, K}, 90, 0.1f), b = c.bias ? random_tensor({N}, 91) : Tensor();
        const Tensor x = rounded(random_tensor({M, K}, 92), a);
        const Linear gpu(w, b, {kGpu, c.compute}, c.activation);
        EXPECT_EQ(gpu.activation_dtype(), a);
        const Tensor want = run_cpu(rounded(w, a), b, c.activation, x);
        const double tol = 4.0 * (a == DType::bf16 ? kBf16Roundoff : kF16Roundoff) + 1e-4;
        EXPECT_LT(scaled_error(run_gpu(gpu, x, a, stride), want), tol);
      }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaLinearActivations,
                         ::testing::Values(DtypeCase{DType::bf16, cpu::FusedActivation::none, true},
                                           DtypeCase{DType::bf16, cpu::FusedActivation::none, false},
                                           DtypeCase{DType::bf16, cpu::FusedActivation::gelu_erf, true},
                                           DtypeCase{DType::bf16, cpu::FusedActivation::tanh, true},
                                           DtypeCase{DType::bf16, cpu::FusedActivation::relu, true},
                                           DtypeCase{DType::bf16, cpu::FusedActivation::gelu_tanh, true},
                                           DtypeCase{DType::f16, cpu::FusedActivation::gelu_tanh, false},
                                           DtypeCase{DType::f16, cpu::FusedActivation::none, true},
                                           DtypeCase{DType::f16, cpu::FusedActivation::gelu_erf, false},
                                           DtypeCase{DType::f16, cpu::FusedActivation::relu, true}));

// A GELU over an output whose rows hold no whole group of 8 (N = 13) takes the one-value path.
TEST_F(CudaLinearDtypes, ActivationOnRowsOfOddLengthMatchesTheCpu) {
  const int64_t N = 13, K = 64, M = 45;
  const Tensor w = random_tensor({N, K}, 5, 0.1f), b = random_tensor({N}, 6);
  const Tensor x = rounded(random_tensor({M, K}, 7), DType::bf16);
  const Linear gpu(w, b, {kGpu, DType::bf16}, cpu::FusedActivation::gelu_erf);
  const Tensor want = run_cpu(rounded(w, DType::bf16), b, cpu::FusedActivation::gelu_erf, x);
  EXPECT_LT(scaled_error(run_gpu(gpu, x, DType::bf16), want), 4.0 * kBf16Roundoff + 1e-4);
}

// tanh-GELU on f32: cuBLASLt's GELU epilogue for many rows, tach's pass after the GEMV for a few.
// cuBLASLt may evaluate tanh with the hardware's approximation (tanh.approx.f32: relative error
// about 2^-11), so 1e-3 of the outputs' scale; the GEMV's pass is torch's formula in f32.
TEST_F(CudaLinearDtypes, TanhGeluOnF32MatchesTheCpu) {
  const int64_t N = 96, K = 256;
  const Tensor w = random_tensor({N, K}, 15, 0.1f), b = random_tensor({N}, 16);
  const Linear gpu(w, b, {kGpu, DType::f32}, cpu::FusedActivation::gelu_tanh);
  for (const int64_t M : {int64_t(2), int64_t(40)}) {
    const Tensor x = random_tensor({M, K}, 17);
    const Tensor want = run_cpu(w, b, cpu::FusedActivation::gelu_tanh, x);
    EXPECT_LT(scaled_error(run_gpu(gpu, x, DType::f32), want), M <= 4 ? 1e-4 : 1e-3) << M << " rows";
  }
}

// f32 activations still go through a bf16 layer (callers not yet on bf16): x rounded to bf16 by
// the GEMV or the conversion, y in f32, within the same bound less y's rounding.
TEST_F(CudaLinearDtypes, F32ActivationsThroughA16BitLayerStayF32) {
  const int64_t N = 96, K = 256;
  const Tensor w = random_tensor({N, K}, 8, 0.1f), b = random_tensor({N}, 9);
  const Linear gpu(w, b, {kGpu, DType::bf16});
  for (const int64_t M : {int64_t(2), int64_t(40)}) {
    const Tensor x = random_tensor({M, K}, 10);
    const Tensor want = run_cpu(rounded(w, DType::bf16), b, cpu::FusedActivation::none, rounded(x, DType::bf16));
    EXPECT_LT(scaled_error(run_gpu(gpu, x, DType::f32), want), 1e-4) << M << " rows";
  }
}

// bf16 activations into an f32 layer, or f16 into a bf16 one, are errors naming both dtypes.
TEST_F(CudaLinearDtypes, AnActivationDtypeTheLayerDoesNotTakeIsAClearError) {
  const Tensor w = random_tensor({16, 32}, 11, 0.1f);
  const Linear f32_layer(w, Tensor(), {kGpu, DType::f32});
  const Linear bf16_layer(w, Tensor(), {kGpu, DType::bf16});
  Tensor x16 = on_gpu(Tensor::zeros({2, 32}, DType::f16)), y16 = Tensor::empty({2, 16}, DType::f16, kGpu);
  std::string e = test::error_of([&] { linear_forward(y16, x16, bf16_layer); });
  EXPECT_NE(e.find("activations in f16"), std::string::npos) << e;
  EXPECT_NE(e.find("takes bf16 or f32"), std::string::npos) << e;
  Tensor xb = on_gpu(Tensor::zeros({2, 32}, DType::bf16)), yb = Tensor::empty({2, 16}, DType::bf16, kGpu);
  e = test::error_of([&] { linear_forward(yb, xb, f32_layer); });
  EXPECT_NE(e.find("takes f32 activations"), std::string::npos) << e;
}

struct QuantCase {
  DType compute;  // i8 or nf4
  int64_t K;
};

class CudaQuantizedLinear : public CudaLinearDtypes, public ::testing::WithParamInterface<QuantCase> {};

// int8 and NF4 weights: the GEMV over the packed codes (1 to 4 rows, where K is whole 16-byte
// loads: K % 16 for int8, whole 64-blocks per row for NF4) and the dequantize-then-bf16-GEMM
// path (45 rows, and every row count where K is neither), against the CPU's f32 linear on the
// dequantized weight and bf16-rounded x. The GEMV's error is y's rounding to bf16 (u = 2^-8 of
// |y|) and f32 summation order; the GEMM's adds the weight's rounding to bf16 (u of each weight,
// of random sign, so about u of |y| again) and the bias's (u of |b|): 4u bounds both.
// The f32-activation entry (x rounded to bf16 inside, y in f32) has the same bound less y's.
TEST_P(CudaQuantizedLinear, MatchesTheCpuOnTheDequantizedWeight) {
  const QuantCase c = GetParam();
  const int64_t N = 130, K = c.K;
  const Tensor w = random_tensor({N, K}, 20, 0.1f), b = random_tensor({N}, 21);
  const QuantizedWeight q = c.compute == DType::i8 ? quantize_int8_weight(w) : quantize_nf4_weight(w);
  const Tensor w_dq = dequantize_weight(q, c.compute, N, K);
  for (const cpu::FusedActivation act : {cpu::FusedActivation::none, cpu::FusedActivation::relu}) {
    const Linear gpu(w, b, {kGpu, c.compute}, act);
    EXPECT_EQ(gpu.compute_dtype(), c.compute);
    EXPECT_EQ(gpu.activation_dtype(), DType::bf16);
    EXPECT_EQ(gpu.weight_bytes(), int64_t(q.codes.nbytes() + q.scales.nbytes()) + N * 4);
    for (const int64_t M : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(45)})
      for (const DType a : {DType::bf16, DType::f32}) {
        SCOPED_TRACE(std::to_string(M) + " rows, " + std::string(dtype_name(a)) + " activations");
        const Tensor x = random_tensor({M, K}, 22);
        const Tensor want = run_cpu(w_dq, b, act, rounded(x, DType::bf16));
        const Tensor got = run_gpu(gpu, a == DType::bf16 ? rounded(x, DType::bf16) : x, a);
        EXPECT_LT(scaled_error(got, want), 4.0 * kBf16Roundoff + 1e-4);
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Weights, CudaQuantizedLinear,
                         ::testing::Values(QuantCase{DType::i8, 1024}, QuantCase{DType::i8, 4864},
                                           QuantCase{DType::i8, 104}, QuantCase{DType::nf4, 896},
                                           QuantCase{DType::nf4, 4864}, QuantCase{DType::nf4, 96}));

// An LM head's shape through the quantized GEMVs: more columns than one wave of blocks holds.
// No bias, so y's rounding and summation order alone: 2u.
TEST_F(CudaLinearDtypes, QuantizedGemvOverManyColumnsMatchesTheCpu) {
  const int64_t N = 20000, K = 256;
  const Tensor w = random_tensor({N, K}, 30, 0.1f), x = rounded(random_tensor({2, K}, 31), DType::bf16);
  for (const DType compute : {DType::i8, DType::nf4}) {
    const QuantizedWeight q = compute == DType::i8 ? quantize_int8_weight(w) : quantize_nf4_weight(w);
    const Linear gpu(w, Tensor(), {kGpu, compute});
    const Tensor want = run_cpu(dequantize_weight(q, compute, N, K), Tensor(), cpu::FusedActivation::none, x);
    EXPECT_LT(scaled_error(run_gpu(gpu, x, DType::bf16), want), 2.0 * kBf16Roundoff + 1e-4) << dtype_name(compute);
  }
}

// A weight that is not whole 64-blocks (a small classifier) stays unquantized under nf4, in
// bf16 (the activations' dtype around it), as bitsandbytes users keep such heads out.
TEST_F(CudaLinearDtypes, Nf4KeepsAWeightOfPartialBlocksInBf16) {
  const Tensor w = random_tensor({3, 90}, 40, 0.1f), b = random_tensor({3}, 41);
  const Linear gpu(w, b, {kGpu, DType::nf4});
  EXPECT_EQ(gpu.compute_dtype(), DType::bf16);
  EXPECT_EQ(gpu.activation_dtype(), DType::bf16);
  const Tensor x = rounded(random_tensor({2, 90}, 42), DType::bf16);
  const Tensor want = run_cpu(rounded(w, DType::bf16), b, cpu::FusedActivation::none, x);
  EXPECT_LT(scaled_error(run_gpu(gpu, x, DType::bf16), want), 4.0 * kBf16Roundoff + 1e-4);
}

// The down projection with the gate inside its GEMV (linear_forward_gated) against the gate op then
// the plain linear, on the same gate|up: bit for bit, since the fused GEMV rounds act(gate) · up to
// the activation dtype as the gate op does and then sums as the plain GEMV does. For each gate
// activation, each weight/activation pair the GEMV takes, 1 to 4 rows (fused: the act buffer is
// left as it was) and 6 (the fallback: act written), rows of gate|up strided or not.
struct GatedCase {
  DType compute, activation;
};

class CudaLinearGated : public CudaLinearDtypes, public ::testing::WithParamInterface<GatedCase> {};

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor x = on_cpu(a), y = on_cpu(b);
  return x.nbytes() == y.nbytes() && std::memcmp(x.raw(), y.raw(), x.nbytes()) == 0;
}

TEST_P(CudaLinearGated, FusedGateMatchesTheGateOpThenTheLinearBitForBit) {
  const GatedCase c = GetParam();
  const DType a = c.activation;
  const int64_t N = 72;
  for (const GateActivation gate : {GateActivation::silu, GateActivation::gelu_tanh, GateActivation::gelu})
    for (const int64_t I : {int64_t(64), int64_t(1032), int64_t(4864)})
      for (const int64_t M : {int64_t(1), int64_t(2), int64_t(3), int64_t(4), int64_t(6)})
        for (const int64_t stride : {int64_t(1), int64_t(2)}) {
          SCOPED_TRACE(std::string(gate_op_name(gate)) + ", " + std::to_string(M) + " rows, I " + std::to_string(I) +
                       ", row stride x" + std::to_string(stride));
          const Tensor w = random_tensor({N, I}, 30, 0.05f), b = random_tensor({N}, 31);
          const Linear layer(w, b, {kGpu, c.compute});
          const Tensor values = random_tensor({M, 2 * I}, 32, 2.0f);
          Tensor wide = Tensor::zeros({M, 2 * I * stride}, DType::f32);
          for (int64_t m = 0; m < M; ++m)
            std::memcpy(wide.data<float>() + m * 2 * I * stride, values.data<float>() + m * 2 * I, 2 * I * 4);
          const Tensor gate_up = on_gpu(wide.to(a)).narrow(1, 0, 2 * I);
          // Unfused: the gate op into act (from a contiguous copy), then the linear.
          Tensor act = Tensor::empty({M, I}, a, kGpu), want = Tensor::empty({M, N}, a, kGpu);
          silu_gate_forward(act, on_gpu(values.to(a)), gate);
          linear_forward(want, act, layer);
          // Fused (or its fallback), with an act buffer holding zeros: untouched where fused.
          Tensor scratch = on_gpu(Tensor::zeros({M, I}, a)), got = Tensor::empty({M, N}, a, kGpu);
          linear_forward_gated(got, gate_up, layer, gate, &scratch);
          EXPECT_TRUE(same_bytes(got, want));
          if (M <= 4) EXPECT_TRUE(same_bytes(scratch, Tensor::zeros({M, I}, a))) << "the gate op ran: not fused";
          else EXPECT_TRUE(same_bytes(scratch, act)) << "the fallback did not write act";
        }
}

INSTANTIATE_TEST_SUITE_P(WeightsAndActivations, CudaLinearGated,
                         ::testing::Values(GatedCase{DType::bf16, DType::bf16}, GatedCase{DType::f16, DType::f16},
                                           GatedCase{DType::f32, DType::f32}, GatedCase{DType::bf16, DType::f32}));

// int8 and NF4 weights' GEMVs form the gate too (bf16 or f32 activations, x rounded to bf16 as
// their plain GEMV rounds it): the same bytes as the gate op then the layer, the act buffer
// untouched for 2 rows and written by the fallback for 6.
TEST_F(CudaLinearDtypes, GatedDownWithQuantizedWeightsMatchesTheGateOpThenTheLinear) {
  const int64_t I = 256, N = 64;
  for (const DType q : {DType::i8, DType::nf4})
    for (const DType a : {DType::bf16, DType::f32})
      for (const int64_t M : {int64_t(2), int64_t(6)}) {
        SCOPED_TRACE(std::string(dtype_name(q)) + " weights, " + std::string(dtype_name(a)) + ", " + std::to_string(M) +
                     " rows");
        const Tensor gate_up = on_gpu(random_tensor({M, 2 * I}, 33, 2.0f).to(a));
        const Linear layer(random_tensor({N, I}, 34, 0.05f), random_tensor({N}, 35), {kGpu, q});
        Tensor act = Tensor::empty({M, I}, a, kGpu), want = Tensor::empty({M, N}, a, kGpu);
        silu_gate_forward(act, gate_up, GateActivation::gelu_tanh);
        linear_forward(want, act, layer);
        Tensor scratch = on_gpu(Tensor::zeros({M, I}, a)), got = Tensor::empty({M, N}, a, kGpu);
        linear_forward_gated(got, gate_up, layer, GateActivation::gelu_tanh, &scratch);
        EXPECT_TRUE(same_bytes(got, want));
        EXPECT_TRUE(same_bytes(scratch, M <= 4 ? Tensor::zeros({M, I}, a) : act)) << "fused for 4 rows or fewer only";
      }
}

}  // namespace
}  // namespace tach::ops
