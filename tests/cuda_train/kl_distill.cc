// Distillation's KL op on CUDA against its CPU kernel, same inputs: rows over a few labels, a
// masked LM's vocabulary-wide rows with -100 rows left out, question answering's strided groups
// (start and end over a row's tokens). The gradient accumulates onto a non-zero one. Skipped
// without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda_compare.h"
#include "ops/cross_entropy.h"
#include "ops/kl_distill.h"

namespace tach::test {
namespace {

class CudaTrainKlDistill : public CudaTest {};

// Labels [groups]: every `ignore_every`-th group -100 (0: none ignored, and then no labels tensor).
Tensor mask_labels(int64_t groups, int64_t ignore_every) {
  if (ignore_every == 0) return Tensor();
  Tensor t = Tensor::empty({groups}, DType::i32);
  for (int64_t i = 0; i < groups; ++i) t.data<int32_t>()[i] = i % ignore_every == 1 ? ops::kIgnoreIndex : 0;
  return t;
}

// Both sides' exp and log in double on the host and the device: the loss to 1e-9 of itself, the
// gradient (a double difference rounded to f32) elementwise.
void expect_kl_matches(ops::SoftmaxGroups g, int64_t ignore_every, float T, float scale) {
  SCOPED_TRACE("groups [" + std::to_string(g.outer) + ", " + std::to_string(g.classes) + ", " +
               std::to_string(g.inner) + "], T " + std::to_string(T));
  const Tensor s = random_tensor({g.numel()}, unsigned(g.numel()), 3.0f);
  const Tensor t = random_tensor({g.numel()}, unsigned(g.numel() + 1), 3.0f);
  const Tensor labels = mask_labels(g.groups(), ignore_every);
  const Tensor dstart = random_tensor({g.numel()}, unsigned(g.classes));
  Tensor ds = dstart.to_device(Device::cpu());
  const double want = ops::kl_distill_forward(s, t, labels, g, T);
  ops::kl_distill_backward(ds, s, t, labels, g, T, scale);

  const Tensor gs = on_gpu(s), gt = on_gpu(t), glabels = labels.defined() ? on_gpu(labels) : Tensor();
  Tensor gds = on_gpu(dstart);
  const Tensor loss = on_gpu(Tensor::zeros({1}, DType::f64));
  ops::kl_distill_forward(loss, gs, gt, glabels, g, T);
  ops::kl_distill_backward(gds, gs, gt, glabels, g, T, scale);
  EXPECT_NEAR(on_cpu(loss).data<double>()[0], want, 1e-9 * std::max(1.0, want));
  EXPECT_NEAR(ops::kl_distill_forward(gs, gt, glabels, g, T), want, 1e-9 * std::max(1.0, want));
  EXPECT_LE(scaled_error(on_cpu(gds), ds), kElementwiseTol);
}

TEST_F(CudaTrainKlDistill, MatchesTheCpu) {
  expect_kl_matches({1, 2, 1}, 0, 1.0f, 1.0f);
  expect_kl_matches({37, 5, 1}, 4, 2.0f, 0.5f);      // a token classifier's tokens, some -100
  expect_kl_matches({3, 45, 2}, 0, 3.0f, 1.0f);      // question answering: start and end over 45 tokens
  expect_kl_matches({9, 30522, 1}, 3, 2.0f, 0.25f);  // a masked LM's vocabulary-wide rows
  expect_kl_matches({300, 3, 1}, 0, 0.5f, 1.0f);     // many rows, T below 1
}

// Every group ignored: the loss is 0 and the gradient stays as it was.
TEST_F(CudaTrainKlDistill, EveryGroupIgnored) {
  const ops::SoftmaxGroups g{4, 6, 1};
  Tensor labels = Tensor::empty({4}, DType::i32);
  for (int i = 0; i < 4; ++i) labels.data<int32_t>()[i] = ops::kIgnoreIndex;
  const Tensor s = random_tensor({24}, 1), t = random_tensor({24}, 2), dstart = random_tensor({24}, 3);
  Tensor gd = on_gpu(dstart);
  const Tensor glabels = on_gpu(labels);
  EXPECT_EQ(ops::kl_distill_forward(on_gpu(s), on_gpu(t), glabels, g, 2.0f), 0.0);
  ops::kl_distill_backward(gd, on_gpu(s), on_gpu(t), glabels, g, 2.0f, 1.0f);
  EXPECT_EQ(scaled_error(on_cpu(gd), dstart), 0.0);
}

}  // namespace
}  // namespace tach::test
