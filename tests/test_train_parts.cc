// The training loop's building blocks: losses against central finite differences and known
// values, AdamW against torch.optim.AdamW's update rule step by step, the linear warm-up schedule
// as transformers' get_linear_schedule_with_warmup, and clipping as clip_grad_norm_.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "cpu/gemm.h"
#include "cpu/train_gemm.h"
#include "tach/memory.h"
#include "test_util.h"
#include "ops/adamw.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise_loss.h"
#include "train/grad_norm.h"
#include "train/loss.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"

namespace tach::train {
namespace {

using test::randn;

// A host vector as a tensor the ops take (copied: a test's vector may change after).
template <typename T>
Tensor tensor_of(const std::vector<T>& v, DType dtype) {
  Tensor t = Tensor::empty({int64_t(v.size())}, dtype);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(T));
  return t;
}
Tensor f32(const std::vector<float>& v) { return tensor_of(v, DType::f32); }
Tensor i32(const std::vector<int32_t>& v) { return tensor_of(v, DType::i32); }
std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

// The cross-entropy op over [R, L] rows of x; its softmax lands in a fresh probs.
double cross_entropy(const std::vector<float>& x, const std::vector<int32_t>& labels, int64_t R, int64_t L,
                     Tensor* probs_out = nullptr) {
  const Tensor probs = Tensor::empty({R, L}, DType::f32);
  const double loss = ops::cross_entropy_forward(probs, f32(x).reshape({R, L}), i32(labels));
  if (probs_out) *probs_out = probs;
  return loss;
}

// The shared harness on a loss of x: tolerances for f32 losses with h = 1e-2.
template <typename Loss>
void expect_gradient_matches(std::vector<float> x, const std::vector<float>& analytic, Loss loss) {
  test::expect_finite_difference(
      x, analytic, [&] { return loss(x); }, "loss", 2e-4, 1e-3);
}

TEST(Loss, CrossEntropyKnownValuesAndIgnoredRows) {
  const std::vector<float> logits = {0, 0, 3, 1};
  const std::vector<int32_t> labels = {0, kIgnoreIndex};
  Tensor probs;
  EXPECT_NEAR(cross_entropy(logits, labels, 2, 2, &probs), std::log(2.0), 1e-7);
  EXPECT_NEAR(probs.data<float>()[2], 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
  const Tensor d = Tensor::zeros({2, 2}, DType::f32);
  ops::cross_entropy_backward(d, probs, i32(labels), 1.f);
  EXPECT_FLOAT_EQ(d.data<float>()[0], -0.5f);
  EXPECT_FLOAT_EQ(d.data<float>()[1], 0.5f);
  EXPECT_EQ(d.data<float>()[2], 0.0f) << "an ignored row gets no gradient";
  EXPECT_NE(test::error_of([&] {
              cross_entropy(logits, {2, 0}, 2, 2);
            }).find("label 2 of row 0 is outside the head's 2 labels"),
            std::string::npos);
}

TEST(Loss, CrossEntropyGradientIsTheFiniteDifference) {
  const int64_t B = 3, L = 5;
  const auto x = randn(size_t(B * L), 1, 2.0f);
  const std::vector<int32_t> labels = {4, 0, 2};
  Tensor probs;
  cross_entropy(x, labels, B, L, &probs);
  const Tensor d = Tensor::zeros({B, L}, DType::f32);
  ops::cross_entropy_backward(d, probs, i32(labels), 1.f);
  expect_gradient_matches(x, values(d), [&](const std::vector<float>& v) { return cross_entropy(v, labels, B, L); });
}

// Question answering's pair: each column of [B * T, 2] is its own cross-entropy over the T tokens.
TEST(Loss, SpanCrossEntropyIsTheMeanOfTheStartAndEndLosses) {
  const int64_t B = 2, T = 3;
  const auto x = randn(size_t(B * T * 2), 4, 1.5f);
  const std::vector<int32_t> start = {1, kIgnoreIndex}, end = {2, 0};
  auto loss_of = [&](const std::vector<float>& v) {
    const Tensor probs = Tensor::empty({2, B, T}, DType::f32);
    return ops::span_cross_entropy_forward(probs, f32(v).reshape({B * T, 2}), i32(start), i32(end));
  };
  std::vector<float> starts, ends;
  for (int64_t i = 0; i < B * T; ++i) starts.push_back(x[size_t(2 * i)]), ends.push_back(x[size_t(2 * i + 1)]);
  EXPECT_NEAR(loss_of(x), (cross_entropy(starts, start, B, T) + cross_entropy(ends, end, B, T)) / 2, 1e-12);
  const Tensor probs = Tensor::empty({2, B, T}, DType::f32);
  ops::span_cross_entropy_forward(probs, f32(x).reshape({B * T, 2}), i32(start), i32(end));
  const Tensor d = Tensor::zeros({B * T, 2}, DType::f32);
  ops::span_cross_entropy_backward(d, probs, i32(start), i32(end), 1.f);
  expect_gradient_matches(x, values(d), loss_of);
}

TEST(Loss, MseAndBceGradientsAreTheFiniteDifference) {
  const auto x = randn(8, 2, 1.5f);
  const auto t = randn(8, 3);
  Tensor d = Tensor::zeros({8}, DType::f32);
  ops::mse_backward(d, f32(x), f32(t), 1.f);
  expect_gradient_matches(x, values(d), [&](const std::vector<float>& v) { return ops::mse_forward(f32(v), f32(t)); });

  std::vector<float> y = {1, 0, 1, 1, 0, 0, 0.25f, 1};
  d = Tensor::zeros({8}, DType::f32);
  ops::bce_with_logits_backward(d, f32(x), f32(y), 1.f);
  expect_gradient_matches(x, values(d),
                          [&](const std::vector<float>& v) { return ops::bce_with_logits_forward(f32(v), f32(y)); });
}

TEST(Loss, BceWithLogitsIsStableForLargeLogits) {
  EXPECT_NEAR(ops::bce_with_logits_forward(f32({0.0f}), f32({1.0f})), std::log(2.0), 1e-7);
  EXPECT_NEAR(ops::bce_with_logits_forward(f32({100.0f, -100.0f}), f32({0.0f, 1.0f})), 100.0, 1e-6);  // (100 + 100) / 2
}

TEST(Loss, GradientsAccumulateWithScale) {
  const Tensor d = f32({10.0f, 10.0f});
  ops::mse_backward(d, f32({1.0f, -2.0f}), f32({0.0f, 0.0f}), 0.5f);  // += 0.5 * 2 * x / 2
  EXPECT_FLOAT_EQ(d.data<float>()[0], 10.5f);
  EXPECT_FLOAT_EQ(d.data<float>()[1], 9.0f);
}

// One AdamW update of one tensor through the op.
void adamw_step(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, int64_t step, const AdamWConfig& c,
                bool decay) {
  ops::AdamWTensors t;
  t.add(p, g, m, v, decay);
  ops::adamw_update(t, step, c, false);
}

// torch.optim.AdamW's rule written out in double, step by step (torch/optim/adamw.py,
// _single_tensor_adamw): decay first, then the moments, then the bias-corrected update.
TEST(AdamW, FollowsTorchsUpdateRuleOverSteps) {
  AdamWConfig c;
  c.lr = 1e-2f;
  c.weight_decay = 0.1f;
  const Tensor p = f32({0.5f, -1.0f, 2.0f, 0.0f}), m = Tensor::zeros({4}, DType::f32),
               v = Tensor::zeros({4}, DType::f32);
  std::vector<double> pr = {0.5, -1.0, 2.0, 0.0}, mr(4, 0.0), vr(4, 0.0);
  for (int64_t step = 1; step <= 5; ++step) {
    const auto g = randn(4, uint32_t(step));
    adamw_step(p, f32(g), m, v, step, c, true);
    for (size_t i = 0; i < 4; ++i) {
      pr[i] *= 1.0 - double(c.lr) * double(c.weight_decay);
      mr[i] = 0.9 * mr[i] + 0.1 * g[i];
      vr[i] = 0.999 * vr[i] + 0.001 * double(g[i]) * g[i];
      const double bc1 = 1 - std::pow(0.9, double(step)), bc2 = 1 - std::pow(0.999, double(step));
      pr[i] -= double(c.lr) / bc1 * mr[i] / (std::sqrt(vr[i]) / std::sqrt(bc2) + 1e-8);
    }
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(p.data<float>()[i], pr[i], 1e-6) << "step " << step << " element " << i;
  }
}

TEST(AdamW, FirstStepMovesByTheRateAndDecayIsDecoupled) {
  AdamWConfig c;
  c.lr = 0.1f;
  c.weight_decay = 0.5f;
  // Step 1: m_hat = g and sqrt(v_hat) = |g|, so the move is lr * sign(g) whatever |g| is.
  const Tensor p = f32({1.0f, 1.0f});
  adamw_step(p, f32({1e-3f, -50.0f}), Tensor::zeros({2}, DType::f32), Tensor::zeros({2}, DType::f32), 1, c, false);
  EXPECT_NEAR(p.data<float>()[0], 0.9f, 1e-5);
  EXPECT_NEAR(p.data<float>()[1], 1.1f, 1e-5);
  // With decay, the parameter shrinks by lr * wd first, independent of the gradient.
  const Tensor q = f32({1.0f}), zero = f32({0.0f}), mq = f32({0.0f}), vq = f32({0.0f});
  adamw_step(q, zero, mq, vq, 1, c, true);
  EXPECT_FLOAT_EQ(q.data<float>()[0], 0.95f);
  AdamWConfig bad = c;
  bad.lr = std::nanf("");
  EXPECT_NE(test::error_of([&] { adamw_step(q, zero, mq, vq, 1, bad, true); }).find("learning rate"),
            std::string::npos);
}

TEST(LinearSchedule, MatchesGetLinearScheduleWithWarmup) {
  LinearSchedule s;
  s.peak_lr = 1.0;
  s.warmup_steps = 10;
  s.total_steps = 110;
  EXPECT_DOUBLE_EQ(s.lr(0), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(5), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(10), 1.0);
  EXPECT_DOUBLE_EQ(s.lr(60), 0.5);
  EXPECT_DOUBLE_EQ(s.lr(110), 0.0);
  EXPECT_DOUBLE_EQ(s.lr(200), 0.0);
  LinearSchedule constant;
  constant.peak_lr = 5e-5;
  constant.decay = false;
  EXPECT_DOUBLE_EQ(constant.lr(0), 5e-5);
  EXPECT_DOUBLE_EQ(constant.lr(1000), 5e-5);
}

TEST(GradNorm, ClipsByTheGlobalNormAsTorch) {
  const Tensor a = f32({3.0f}), b = f32({0.0f, 4.0f});
  const double norm = clip_grad_norm({a, b}, 1.0);
  EXPECT_DOUBLE_EQ(norm, 5.0);
  EXPECT_NEAR(a.data<float>()[0], 3.0 / (5.0 + 1e-6), 1e-7);
  EXPECT_NEAR(b.data<float>()[1], 4.0 / (5.0 + 1e-6), 1e-7);
  const Tensor small = f32({0.3f});
  EXPECT_NEAR(clip_grad_norm({small}, 1.0), 0.3, 1e-7);
  EXPECT_FLOAT_EQ(small.data<float>()[0], 0.3f) << "below the limit: unchanged";
  // A non-finite norm leaves the gradients as they are: the step that follows is skipped.
  const Tensor inf = f32({std::numeric_limits<float>::infinity(), 2.0f});
  EXPECT_TRUE(std::isinf(clip_grad_norm({inf}, 1.0)));
  EXPECT_FLOAT_EQ(inf.data<float>()[1], 2.0f);
}

// bf16 mixed precision: inside the scope every training GEMM multiplies bf16-rounded inputs (the
// same as the f32 GEMM of rounded copies), outside it the plain f32 GEMM; the scope restores f32.
TEST(TrainGemm, Bf16RoundsBothInputsAndAccumulatesInF32) {
  const int64_t M = 7, N = 5, K = 33;
  auto A = test::randn(M * K, 81), B = test::randn(N * K, 82);
  std::vector<float> Ar(A.size()), Br(B.size());
  for (size_t i = 0; i < A.size(); ++i) Ar[i] = cpu::round_to_bf16(A[i]);
  for (size_t i = 0; i < B.size(); ++i) Br[i] = cpu::round_to_bf16(B[i]);
  std::vector<float> f32(M * N), rounded(M * N), mixed(M * N), after(M * N);
  const auto backend = cpu::default_gemm_backend();
  cpu::sgemm(backend, false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, f32.data(), N);
  cpu::sgemm(backend, false, true, M, N, K, 1.f, Ar.data(), K, Br.data(), K, 0.f, rounded.data(), N);
  {
    const cpu::TrainPrecisionScope bf16(cpu::TrainPrecision::bf16);
    // A strided view of A (ld 40) exercises the gather.
    std::vector<float> strided(M * 40, 9.f);
    for (int64_t m = 0; m < M; ++m) std::copy_n(A.data() + m * K, K, strided.data() + m * 40);
    // The rounded copies are workspace the allocator counts (a bf16 step's memory report includes
    // them): the peak rises by both operands' copies at least, and nothing stays live.
    const MemoryStats before = memory_stats(Device::cpu());
    reset_memory_peaks(Device::cpu());
    cpu::train_gemm(false, true, M, N, K, 1.f, strided.data(), 40, B.data(), K, 0.f, mixed.data(), N);
    const MemoryStats during = memory_stats(Device::cpu());
    const int64_t copies = (M * K + N * K) * (cpu::bf16_train_gemm_onednn() ? 2 : 4);
    EXPECT_GE(during[MemoryCategory::workspace].peak - before[MemoryCategory::workspace].current, copies);
    EXPECT_EQ(during[MemoryCategory::workspace].current, before[MemoryCategory::workspace].current);
  }
  EXPECT_EQ(cpu::train_precision(), cpu::TrainPrecision::f32);
  cpu::train_gemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, after.data(), N);
  double differs = 0;
  for (int64_t i = 0; i < M * N; ++i) {
    EXPECT_NEAR(mixed[size_t(i)], rounded[size_t(i)], 1e-5 * (1 + std::fabs(rounded[size_t(i)]))) << i;
    EXPECT_EQ(after[size_t(i)], f32[size_t(i)]) << i;
    differs = std::max(differs, double(std::fabs(mixed[size_t(i)] - f32[size_t(i)])));
  }
  EXPECT_GT(differs, 1e-3) << "bf16 inputs must change the product";
  // Near 1 bf16's spacing is 1/128: halfway cases round to the even neighbour, down or up.
  EXPECT_EQ(cpu::round_to_bf16(1.0f + 1.0f / 256), 1.0f);
  EXPECT_EQ(cpu::round_to_bf16(1.0f + 3.0f / 256), 1.0f + 4.0f / 256);
  EXPECT_EQ(cpu::round_to_bf16(1.0f + 1.5f / 256), 1.0f + 2.0f / 256);  // past halfway: up
}

}  // namespace
}  // namespace tach::train
