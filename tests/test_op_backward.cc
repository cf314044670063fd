// Backward kernels against central finite differences of their forward kernels, in one harness:
// the gradient of L = sum(dout * forward(x)) with respect to every input element.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "test_util.h"

namespace tach::ops {
namespace {

double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

using test::expect_finite_difference;
using test::randn;

TEST(Backward, Gelu) {
  const int64_t n = 64;
  auto x = randn(n, 1, 2.0f);
  const auto dout = randn(n, 2);
  std::vector<float> dx(n, 0.5f);  // gradients accumulate: start from something
  gelu_backward_cpu(dx.data(), x.data(), dout.data(), n);
  for (auto& v : dx) v -= 0.5f;
  std::vector<float> y(n);
  expect_finite_difference(x, dx, [&] {
    gelu_forward_cpu(y.data(), x.data(), n);
    return dot(y, dout);
  }, "dx");
}

TEST(Backward, LayerNormWithResidual) {
  const int64_t N = 3, C = 16;
  auto x = randn(N * C, 3), res = randn(N * C, 4), gamma = randn(C, 5), beta = randn(C, 6);
  const auto dout = randn(N * C, 7);
  std::vector<float> out(N * C), mean(N), rstd(N), inp(N * C);
  layer_norm_forward_cpu(out.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f, mean.data(),
                         rstd.data());
  for (int64_t i = 0; i < N * C; ++i) inp[i] = x[i] + res[i];
  std::vector<float> dinp(N * C, 0.f), dgamma(C, 0.f), dbeta(C, 0.f);
  layer_norm_backward_cpu(dinp.data(), dgamma.data(), dbeta.data(), dout.data(), inp.data(), gamma.data(), mean.data(),
                          rstd.data(), N, C);
  const auto loss = [&] {
    layer_norm_forward_cpu(out.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f);
    return dot(out, dout);
  };
  expect_finite_difference(x, dinp, loss, "dx");
  expect_finite_difference(res, dinp, loss, "dresidual");
  expect_finite_difference(gamma, dgamma, loss, "dgamma");
  expect_finite_difference(beta, dbeta, loss, "dbeta");
  // The saved statistics are the forward's: the same output with and without saving them.
  std::vector<float> again(N * C);
  layer_norm_forward_cpu(again.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f);
  layer_norm_forward_cpu(out.data(), x.data(), res.data(), gamma.data(), beta.data(), N, C, 1e-5f, mean.data(),
                         rstd.data());
  EXPECT_EQ(again, out);
}

}  // namespace
}  // namespace tach::ops
