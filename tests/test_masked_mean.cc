// The masked mean (ops/masked_mean.h), the pooling of ModernBERT's mean-pooled classifier in
// training: the forward against the mean computed directly, bit for bit against the host loop the
// decoder step ran before the op (f32 sums in token order), the backward against finite
// differences and its accumulate rule, and the operands it refuses, naming the op.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ops/masked_mean.h"
#include "test_util.h"

namespace tach::ops {
namespace {

using test::error_of;
using test::random_normal;

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }
bool mentions(const std::string& message, const std::string& what) { return message.find(what) != std::string::npos; }

// [B, T] i32 with holes: row 0 keeps every token, row 1 its first 3, row 2 tokens 1, 2 and 5 (a
// pad inside the row and on both sides: the op must not assume right padding), row 3 one token.
Tensor holey_mask(int64_t T) {
  const std::vector<std::vector<int>> kept = {{0, 1, 2, 3, 4, 5}, {0, 1, 2}, {1, 2, 5}, {4}};
  Tensor m = Tensor::zeros({int64_t(kept.size()), T}, DType::i32);
  for (size_t b = 0; b < kept.size(); ++b)
    for (const int t : kept[b]) m.data<int32_t>()[int64_t(b) * T + t] = 1;
  return m;
}

// The loop the decoder step ran in host memory before the op: f32 sums in token order, an f32
// count, each element divided by it.
std::vector<float> host_loop_mean(const Tensor& x, const Tensor& mask, int64_t C) {
  const int64_t B = mask.size(0), T = mask.size(1);
  std::vector<float> out(size_t(B * C), 0.0f);
  for (int64_t b = 0; b < B; ++b) {
    float n = 0;
    for (int64_t t = 0; t < T; ++t) {
      if (!mask.data<int32_t>()[b * T + t]) continue;
      n += 1;
      for (int64_t k = 0; k < C; ++k) out[size_t(b * C + k)] += x.data<float>()[(b * T + t) * C + k];
    }
    for (int64_t k = 0; k < C; ++k) out[size_t(b * C + k)] /= n;
  }
  return out;
}

TEST(MaskedMean, ForwardIsTheMeanOfTheKeptTokens) {
  const int64_t T = 6, C = 5;
  const Tensor mask = holey_mask(T);
  const int64_t B = mask.size(0);
  const Tensor x = random_normal(B * T, C, 1, 2.0f);
  Tensor out = Tensor::empty({B, C}, DType::f32);
  masked_mean_forward(out, x, mask);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < C; ++k) {
      double sum = 0;
      int kept = 0;
      for (int64_t t = 0; t < T; ++t)
        if (mask.data<int32_t>()[b * T + t]) sum += x.data<float>()[(b * T + t) * C + k], ++kept;
      // f32 sums of at most 6 terms of size ~2: a few ulps of the sum.
      EXPECT_NEAR(out.data<float>()[b * C + k], sum / kept, 1e-5) << "row " << b << ", column " << k;
    }
  // A row that keeps one token pools that token exactly.
  for (int64_t k = 0; k < C; ++k) EXPECT_EQ(out.data<float>()[3 * C + k], x.data<float>()[(3 * T + 4) * C + k]);
  EXPECT_EQ(values(out), host_loop_mean(x, mask, C)) << "the decoder step's numbers are the ones it had before";
  // x as [B, T, C]: the same rows.
  Tensor out3 = Tensor::empty({B, C}, DType::f32);
  masked_mean_forward(out3, x.reshape({B, T, C}), mask);
  EXPECT_EQ(values(out3), values(out));
}

// transformers' (h * mask).sum / mask.sum: a row of padding only divides 0 by 0.
TEST(MaskedMean, ARowWithNoKeptTokenIsNotANumber) {
  const Tensor x = random_normal(4, 3, 2);
  Tensor mask = Tensor::zeros({2, 2}, DType::i32), out = Tensor::empty({2, 3}, DType::f32);
  mask.data<int32_t>()[0] = 1;
  masked_mean_forward(out, x, mask);
  EXPECT_FALSE(std::isnan(out.data<float>()[0]));
  for (int64_t k = 0; k < 3; ++k) EXPECT_TRUE(std::isnan(out.data<float>()[3 + k])) << k;
}

// The mean is linear, so d(Σ w · out)/dx is the backward of w: checked against central differences
// of that loss, and the backward adds to dx (a kept token's row gets dout / count, a dropped one
// nothing).
TEST(MaskedMean, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int64_t T = 6, C = 3;
  const Tensor mask = holey_mask(T);
  const int64_t B = mask.size(0);
  Tensor x = random_normal(B * T, C, 3);
  const Tensor w = random_normal(B, C, 4);
  Tensor dx = Tensor::empty({B * T, C}, DType::f32);
  std::fill(dx.data<float>(), dx.data<float>() + dx.numel(), 0.5f);
  masked_mean_backward(dx, w, mask);
  std::vector<float> analytic = values(dx);
  for (float& g : analytic) g -= 0.5f;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      if (mask.data<int32_t>()[b * T + t]) continue;
      for (int64_t k = 0; k < C; ++k) {
        EXPECT_EQ(dx.data<float>()[(b * T + t) * C + k], 0.5f) << "a dropped token: " << b << ", " << t;
      }
    }
  EXPECT_NEAR(analytic[size_t((1 * T + 2) * C)], w.data<float>()[1 * C] / 3.0f, 1e-6) << "row 1 keeps 3 tokens";

  std::vector<float> xs = values(x);
  Tensor out = Tensor::empty({B, C}, DType::f32);
  const auto loss = [&] {
    std::copy(xs.begin(), xs.end(), x.data<float>());
    masked_mean_forward(out, x, mask);
    double l = 0;
    for (int64_t i = 0; i < B * C; ++i) l += double(w.data<float>()[i]) * out.data<float>()[i];
    return l;
  };
  test::expect_finite_difference(xs, analytic, loss, "masked_mean");
}

TEST(MaskedMean, NamesTheOpAndTheOperandItRefuses) {
  const Tensor mask = holey_mask(6), x = random_normal(24, 5, 5);
  Tensor out = Tensor::empty({4, 5}, DType::f32);
  std::string e = error_of([&] { masked_mean_forward(out, random_normal(23, 5, 5), mask); });
  EXPECT_TRUE(mentions(e, "masked_mean") && mentions(e, "x") && mentions(e, "[24, 5]")) << e;
  e = error_of([&] { masked_mean_forward(Tensor::empty({3, 5}, DType::f32), x, mask); });
  EXPECT_TRUE(mentions(e, "masked_mean") && mentions(e, "out")) << e;
  e = error_of([&] { masked_mean_forward(out, x, Tensor::zeros({4, 6}, DType::f32)); });
  EXPECT_TRUE(mentions(e, "masked_mean") && mentions(e, "mask") && mentions(e, "i32")) << e;
  e = error_of([&] { masked_mean_backward(Tensor::empty({24, 4}, DType::f32), out, mask); });
  EXPECT_TRUE(mentions(e, "masked_mean_backward") && mentions(e, "dx")) << e;
}

}  // namespace
}  // namespace tach::ops
