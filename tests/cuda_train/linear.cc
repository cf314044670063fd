// The training linear and LoRA on CUDA against the CPU, same inputs: the forward with and without
// a bias; the backward's dx, dW, db accumulating into gradients that start non-zero, each skipped
// when undefined (a frozen weight, a first layer); the bias gradient bitwise equal over two runs
// (no atomics); the bf16 autocast path (operands rounded to bf16, f32 accumulation) on both sides;
// QLoRA's NF4 base dequantized on the GPU bit for bit as on the CPU, then its forward and dx; LoRA
// forward and backward with and without dropout, into a strided output. Sizes are odd (M = 1, 37,
// 300; widths not multiples of 32). Skipped without a CUDA device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cpu/nf4.h"
#include "cpu/train_gemm.h"
#include "cuda_compare.h"
#include "ops/linear.h"
#include "ops/lora.h"

namespace tach::test {
namespace {

class CudaTrainLinear : public CudaTest {};

// Tolerances.
// f32: oneDNN's f32 GEMM and cuBLASLt's (TF32 off) differ only in summation order and blocking.
constexpr double kGemmTol = kReductionTol;
// bf16 with operands that are inputs of the op: both sides round them identically (nearest even)
// and bf16 products are exact in f32, so again only the summation order differs.
constexpr double kBf16SameOperandsTol = kReductionTol;
// bf16 where an operand is an intermediate the op computed itself (LoRA's xa, dxa): the two sides'
// f32 intermediates differ in their last bits, which can move a value to the neighbouring bf16
// (one bf16 step is 2^-8 of it); each such element changes a product by that much at most.
constexpr double kBf16IntermediateTol = 1.0 / 256;

Tensor gpu_nan(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32, kGpu);
  poison(t);
  return t;
}

// on_cpu copies, from the CPU too: the gradients below accumulate into copies of their start values.
bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// The CPU result against the GPU one (copied back), named for the failure message.
void expect_close(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  const double err = scaled_error(on_cpu(gpu), cpu);
  EXPECT_LE(err, tol) << what;
}

struct Shape3 {
  int64_t M, N, K;
};
std::string name(const Shape3& s) {
  return "M " + std::to_string(s.M) + " N " + std::to_string(s.N) + " K " + std::to_string(s.K);
}
// 1100 rows: the bias gradient sums them in three chunks of 512.
const std::vector<Shape3> kShapes = {{1, 37, 300}, {37, 300, 129}, {300, 37, 64}, {37, 1, 33}, {1100, 45, 16}};

// The forward at the current training precision, both sides, with and without a bias.
void check_forward(const Shape3& s, double tol, const std::string& what) {
  const Tensor x = random_tensor({s.M, s.K}, 1), W = random_tensor({s.N, s.K}, 2, 0.1f), b = random_tensor({s.N}, 3);
  for (const bool with_bias : {true, false}) {
    const Tensor bias = with_bias ? b : Tensor();
    Tensor want = Tensor::empty({s.M, s.N}, DType::f32);
    ops::linear_forward_train(want, x, W, bias);
    Tensor got = gpu_nan({s.M, s.N});
    ops::linear_forward_train(got, on_gpu(x), on_gpu(W), with_bias ? on_gpu(b) : Tensor());
    expect_close(got, want, tol, what + " " + name(s) + (with_bias ? " with bias" : " no bias"));
  }
  // A bias that starts 4 bytes into its buffer (a view), which cuBLASLt's epilogue may not read.
  const Tensor wide_b = on_gpu(random_tensor({s.N + 1}, 3));
  Tensor want = Tensor::empty({s.M, s.N}, DType::f32), got = gpu_nan({s.M, s.N});
  ops::linear_forward_train(want, x, W, on_cpu(wide_b).narrow(0, 1, s.N).contiguous());
  ops::linear_forward_train(got, on_gpu(x), on_gpu(W), wide_b.narrow(0, 1, s.N));
  expect_close(got, want, tol, what + " " + name(s) + " with a bias view");
}

// The backward, every gradient starting non-zero (it accumulates), each subset defined.
void check_backward(const Shape3& s, double tol, const std::string& what) {
  const Tensor x = random_tensor({s.M, s.K}, 4), W = random_tensor({s.N, s.K}, 5, 0.1f),
               dy = random_tensor({s.M, s.N}, 6);
  const Tensor dx0 = random_tensor({s.M, s.K}, 7), dW0 = random_tensor({s.N, s.K}, 8), db0 = random_tensor({s.N}, 9);
  for (const int defined : {7, 6, 5, 3, 1}) {  // bits: dx, dW, db
    const bool has_dx = defined & 1, has_dw = defined & 2, has_db = defined & 4;
    Tensor dx = on_cpu(dx0), dW = on_cpu(dW0), db = on_cpu(db0);
    ops::linear_backward(has_dx ? dx : Tensor(), has_dw ? dW : Tensor(), has_db ? db : Tensor(), dy, x, W);
    Tensor gdx = on_gpu(dx0), gdW = on_gpu(dW0), gdb = on_gpu(db0);
    ops::linear_backward(has_dx ? gdx : Tensor(), has_dw ? gdW : Tensor(), has_db ? gdb : Tensor(), on_gpu(dy),
                         on_gpu(x), on_gpu(W));
    const std::string where = what + " " + name(s) + " defined " + std::to_string(defined);
    // An undefined gradient's buffer is untouched on both sides (dx0 etc. as they were).
    expect_close(gdx, dx, tol, where + ": dx");
    expect_close(gdW, dW, tol, where + ": dW");
    expect_close(gdb, db, tol, where + ": db");
    if (!has_dx) { EXPECT_TRUE(bitwise_equal(on_cpu(gdx), dx0)) << where << ": dx skipped"; }
    if (!has_dw) { EXPECT_TRUE(bitwise_equal(on_cpu(gdW), dW0)) << where << ": dW skipped"; }
    if (!has_db) { EXPECT_TRUE(bitwise_equal(on_cpu(gdb), db0)) << where << ": db skipped"; }
  }
}

TEST_F(CudaTrainLinear, ForwardMatchesCpu) {
  for (const Shape3& s : kShapes) check_forward(s, kGemmTol, "f32");
}

TEST_F(CudaTrainLinear, BackwardAccumulatesAsTheCpuAndSkipsUndefinedGradients) {
  for (const Shape3& s : kShapes) check_backward(s, kGemmTol, "f32");
}

TEST_F(CudaTrainLinear, GradientsAreBitwiseEqualOverTwoRuns) {
  const int64_t M = 1100, N = 129, K = 37;  // the bias gradient in three chunks
  const Tensor x = on_gpu(random_tensor({M, K}, 1)), W = on_gpu(random_tensor({N, K}, 2)),
               dy = on_gpu(random_tensor({M, N}, 3));
  const Tensor dW0 = random_tensor({N, K}, 4), db0 = random_tensor({N}, 5);
  Tensor dW[2], db[2];
  for (int run = 0; run < 2; ++run) {
    dW[run] = on_gpu(dW0), db[run] = on_gpu(db0);
    ops::linear_backward(Tensor(), dW[run], db[run], dy, x, W);
  }
  EXPECT_TRUE(bitwise_equal(on_cpu(db[0]), on_cpu(db[1]))) << "db: a fixed summation order";
  // cuBLASLt's plan is cached per shape and per alignment of the operands; the same plan gives the
  // same bits (both buffers normally start on 256 bytes; if not, two plans may sum differently).
  if (reinterpret_cast<uintptr_t>(dW[0].raw()) % 256 == reinterpret_cast<uintptr_t>(dW[1].raw()) % 256) {
    EXPECT_TRUE(bitwise_equal(on_cpu(dW[0]), on_cpu(dW[1]))) << "dW: one cuBLASLt plan";
  }
}

TEST_F(CudaTrainLinear, Bf16AutocastRoundsOperandsAsTheCpu) {
  const cpu::TrainPrecisionScope bf16(cpu::TrainPrecision::bf16);
  for (const Shape3& s : kShapes) {
    check_forward(s, kBf16SameOperandsTol, "bf16");
    check_backward(s, kBf16SameOperandsTol, "bf16");
  }
}

// Guards the test above: bf16 must change the numbers (else the GPU ran in f32 and the
// comparison could not tell).
TEST_F(CudaTrainLinear, Bf16AutocastIsNotF32) {
  const int64_t M = 37, N = 300, K = 129;
  const Tensor x = on_gpu(random_tensor({M, K}, 1)), W = on_gpu(random_tensor({N, K}, 2));
  Tensor y32 = gpu_nan({M, N}), y16 = gpu_nan({M, N});
  ops::linear_forward_train(y32, x, W, Tensor());
  {
    const cpu::TrainPrecisionScope bf16(cpu::TrainPrecision::bf16);
    ops::linear_forward_train(y16, x, W, Tensor());
  }
  EXPECT_GT(scaled_error(on_cpu(y16), on_cpu(y32)), 1e-4) << "bf16 operands carry 8 significant bits";
}

// NF4 weights: parts of different heights (the engine's fused q|k|v) whose 64-blocks straddle
// rows (K = 72), quantized on the CPU, copied to the GPU.
cpu::Nf4Matrix nf4_weight(int64_t K, unsigned seed) {
  const std::vector<int64_t> parts = {48, 80, 16};
  int64_t N = 0;
  for (int64_t r : parts) N += r;
  const Tensor w = random_tensor({N, K}, seed, 0.05f);
  return cpu::quantize_nf4_matrix(w.data<float>(), parts, K);
}

cpu::Nf4Matrix nf4_on_gpu(const cpu::Nf4Matrix& m) {
  cpu::Nf4Matrix g = m;
  for (cpu::Nf4Tensor& p : g.parts) {
    p.codes = on_gpu(p.codes);
    p.qabsmax = on_gpu(p.qabsmax);
    p.absmax2 = on_gpu(p.absmax2);
  }
  return g;
}

TEST_F(CudaTrainLinear, Nf4DequantizesBitForBitAsTheCpu) {
  const int64_t K = 72;
  const cpu::Nf4Matrix W = nf4_weight(K, 11);
  Tensor want = Tensor::empty({W.rows, K}, DType::f32);
  W.dequantize_rows(0, W.rows, want.data<float>());
  Tensor got = gpu_nan({W.rows, K});
#if TACH_HAS_CUDA  // the kernel exists only with the backend (the fixture skips without it anyway)
  ops::nf4_dequantize_cuda(0, got.data<float>(), nf4_on_gpu(W));
#endif
  EXPECT_TRUE(bitwise_equal(on_cpu(got), want));
}

TEST_F(CudaTrainLinear, Nf4ForwardAndDxMatchCpu) {
  const int64_t K = 72;
  const cpu::Nf4Matrix W = nf4_weight(K, 12);
  const cpu::Nf4Matrix gW = nf4_on_gpu(W);
  const int64_t N = W.rows;
  for (const cpu::TrainPrecision precision : {cpu::TrainPrecision::f32, cpu::TrainPrecision::bf16}) {
    const cpu::TrainPrecisionScope scope(precision);
    // The dequantized weight is the same on both sides, so the tolerances are the f32 weight's.
    const double tol = precision == cpu::TrainPrecision::f32 ? kGemmTol : kBf16SameOperandsTol;
    const std::string what = precision == cpu::TrainPrecision::f32 ? "f32" : "bf16";
    for (const int64_t M : {1, 37, 300}) {
      const Tensor x = random_tensor({M, K}, 13), b = random_tensor({N}, 14), dy = random_tensor({M, N}, 15);
      Tensor want = Tensor::empty({M, N}, DType::f32), got = gpu_nan({M, N});
      ops::linear_forward_train(want, x, W, b);
      ops::linear_forward_train(got, on_gpu(x), gW, on_gpu(b));
      expect_close(got, want, tol, what + " nf4 forward M " + std::to_string(M));
      const Tensor dx0 = random_tensor({M, K}, 16), db0 = random_tensor({N}, 17);
      Tensor dx = on_cpu(dx0), db = on_cpu(db0);
      ops::linear_backward(dx, Tensor(), db, dy, x, W);
      Tensor gdx = on_gpu(dx0), gdb = on_gpu(db0);
      ops::linear_backward(gdx, Tensor(), gdb, on_gpu(dy), on_gpu(x), gW);
      expect_close(gdx, dx, tol, what + " nf4 dx M " + std::to_string(M));
      expect_close(gdb, db, kReductionTol, what + " nf4 db M " + std::to_string(M));
    }
  }
}

// LoRA into columns [7, 7 + N) of a wider output, the rest of which must stay as it was.
void check_lora(int64_t M, float dropout, bool with_dx, double tol, const std::string& what) {
  ops::LoraShape s;
  s.M = M, s.K = 129, s.N = 37, s.r = 8, s.scale = 2.0f, s.dropout = dropout, s.dropout_key = 0x1234abcdULL;
  const int64_t ldy = s.N + 20, row0 = 7;
  const std::string where =
      what + " M " + std::to_string(M) + " dropout " + std::to_string(dropout) + (with_dx ? "" : " no dx");
  const Tensor x = random_tensor({s.M, s.K}, 21), A = random_tensor({s.r, s.K}, 22, 0.1f),
               B = random_tensor({s.N, s.r}, 23, 0.1f), out0 = random_tensor({s.M, ldy}, 24);
  // Forward.
  Tensor out = on_cpu(out0), xa = Tensor::empty({s.M, s.r}, DType::f32);
  Tensor scratch = Tensor::empty({s.M * s.K + s.M * s.r}, DType::f32);
  ops::lora_forward_train(out.narrow(1, row0, s.N), xa, x, A, B, s, scratch);
  Tensor gout = on_gpu(out0), gxa = gpu_nan({s.M, s.r}), gscratch = gpu_nan({s.M * s.K + s.M * s.r});
  const Tensor gx = on_gpu(x), gA = on_gpu(A), gB = on_gpu(B);
  ops::lora_forward_train(gout.narrow(1, row0, s.N), gxa, gx, gA, gB, s, gscratch);
  expect_close(gout, out, tol, where + ": y");
  expect_close(gxa, xa, tol, where + ": xa");
  // Backward from the CPU's saved xa on both sides, gradients starting non-zero.
  const Tensor dy_full = random_tensor({s.M, ldy}, 25);
  const Tensor dx0 = random_tensor({s.M, s.K}, 26), dA0 = random_tensor({s.r, s.K}, 27),
               dB0 = random_tensor({s.N, s.r}, 28);
  Tensor dx = on_cpu(dx0), dA = on_cpu(dA0), dB = on_cpu(dB0);
  ops::lora_backward(with_dx ? dx : Tensor(), dA, dB, dy_full.narrow(1, row0, s.N), x, xa, A, B, s, scratch);
  Tensor gdx = on_gpu(dx0), gdA = on_gpu(dA0), gdB = on_gpu(dB0);
  const Tensor gdy = on_gpu(dy_full);
  ops::lora_backward(with_dx ? gdx : Tensor(), gdA, gdB, gdy.narrow(1, row0, s.N), gx, on_gpu(xa), gA, gB, s, gscratch);
  expect_close(gdx, dx, tol, where + ": dx");
  expect_close(gdA, dA, tol, where + ": dA");
  expect_close(gdB, dB, tol, where + ": dB");
  if (!with_dx) { EXPECT_TRUE(bitwise_equal(on_cpu(gdx), dx0)) << where << ": dx skipped"; }
}

TEST_F(CudaTrainLinear, LoraForwardAndBackwardMatchCpu) {
  for (const int64_t M : {1, 37, 300})
    for (const float dropout : {0.0f, 0.1f})
      for (const bool with_dx : {true, false}) check_lora(M, dropout, with_dx, kGemmTol, "f32");
}

TEST_F(CudaTrainLinear, LoraBf16MatchesCpu) {
  const cpu::TrainPrecisionScope bf16(cpu::TrainPrecision::bf16);
  for (const float dropout : {0.0f, 0.1f}) check_lora(37, dropout, true, kBf16IntermediateTol, "bf16");
}

// Prints (asserts nothing: a timing on a shared machine is no test) the training linear's
// throughput at DistilBERT-base's FFN up-projection for a batch of 32 x 128 tokens, f32 and bf16,
// for docs/perf.md. Each timing ends with a copy back of one element, which waits for the stream.
TEST_F(CudaTrainLinear, PrintsThroughputAtDistilBertShapes) {
  const int64_t M = 32 * 128, N = 3072, K = 768;
  const Tensor x = on_gpu(random_tensor({M, K}, 1)), W = on_gpu(random_tensor({N, K}, 2, 0.05f)),
               b = on_gpu(random_tensor({N}, 3)), dy = on_gpu(random_tensor({M, N}, 4));
  Tensor y = gpu_nan({M, N}), dx = on_gpu(random_tensor({M, K}, 5)), dW = on_gpu(random_tensor({N, K}, 6)),
         db = on_gpu(random_tensor({N}, 7));
  const auto seconds_per = [&](const std::function<void()>& step) {
    const int reps = 10;
    step();  // plans and pool blocks
    (void)on_cpu(y.reshape({M * N}).narrow(0, 0, 1));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) step();
    (void)on_cpu(y.reshape({M * N}).narrow(0, 0, 1));
    (void)on_cpu(dW.reshape({N * K}).narrow(0, 0, 1));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
  };
  for (const cpu::TrainPrecision precision : {cpu::TrainPrecision::f32, cpu::TrainPrecision::bf16}) {
    const cpu::TrainPrecisionScope scope(precision);
    const double fwd = seconds_per([&] { ops::linear_forward_train(y, x, W, b); });
    const double bwd = seconds_per([&] { ops::linear_backward(dx, dW, db, dy, x, W); });
    const double flops = 2.0 * double(M) * double(N) * double(K);
    std::printf(
        "training linear [%lld, %lld] x [%lld, %lld]^T %s: forward %.3f ms (%.1f TFLOP/s), backward dx+dW+db "
        "%.3f ms (%.1f TFLOP/s)\n",
        (long long)M, (long long)K, (long long)N, (long long)K, precision == cpu::TrainPrecision::f32 ? "f32" : "bf16",
        fwd * 1e3, flops / fwd * 1e-12, bwd * 1e3, 2 * flops / bwd * 1e-12);
  }
}

}  // namespace
}  // namespace tach::test
