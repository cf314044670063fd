// The optimizer step's ops and the losses on CUDA against the CPU: AdamW's multi-tensor update over
// 20 steps (with the clip read inside it, and the optimizer's clip_and_step), the gradient norm
// (the list form and the multi-tensor one over the update's chunk records), clipping and zeroing, cross-entropy (rows and question answering's
// span pair), MSE and BCE with logits; each loss also in its form that leaves the value on the
// device. The checks of those device forms' arguments run without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "cuda_compare.h"
#include "ops/adamw.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise_loss.h"
#include "ops/grad_norm.h"
#include "train/grad_norm.h"
#include "train/optimizer.h"

namespace tach::test {
namespace {

class CudaTrainOptimizer : public CudaTest {};

// Labels [n] in [0, L), every `ignore_every`-th one kIgnoreIndex (0: none ignored).
Tensor labels_of(int64_t n, int64_t L, unsigned seed, int64_t ignore_every) {
  Tensor t = Tensor::empty({n}, DType::i32);
  uint32_t x = seed * 2654435761u + 1;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<int32_t>()[i] = int32_t((x >> 8) % uint32_t(L));
    if (ignore_every && i % ignore_every == ignore_every - 1) t.data<int32_t>()[i] = ops::kIgnoreIndex;
  }
  return t;
}

Tensor abs_of(Tensor t) {
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]);
  return t;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) { return e.what(); }
  return "(no error)";
}

// ---- AdamW ---------------------------------------------------------------------------------

struct AdamWState {
  std::vector<Tensor> params, grads, m, v;
  ops::AdamWTensors list;
};

// Sizes around the 64K chunk (70000 spans two) and odd ones; moments start non-zero, as after a
// first step.
AdamWState adamw_state(const std::vector<int64_t>& sizes, bool gpu) {
  AdamWState s;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const unsigned seed = unsigned(100 + 10 * i);
    Tensor p = random_tensor({sizes[i]}, seed), g = random_tensor({sizes[i]}, seed + 1),
           m = random_tensor({sizes[i]}, seed + 2, 0.1f), v = abs_of(random_tensor({sizes[i]}, seed + 3, 0.01f));
    if (gpu) p = on_gpu(p), g = on_gpu(g), m = on_gpu(m), v = on_gpu(v);
    s.params.push_back(p), s.grads.push_back(g), s.m.push_back(m), s.v.push_back(v);
    s.list.add(p, g, m, v, /*decay=*/i % 2 == 0);
  }
  return s;
}

// 20 steps on both devices with new gradients each step and a schedule's changing learning rate:
// parameters and moments agree within 1e-6 of their scale. Both sides do the same f32 operations
// per element; only where the CPU compiler fused a multiply-add does a last bit differ.
void expect_adamw_steps_match(const ops::AdamWConfig& base, bool chunked) {
  const std::vector<int64_t> sizes = {1, 37, 300, 70000, 1000};
  AdamWState cpu = adamw_state(sizes, false), gpu = adamw_state(sizes, true);
  for (int64_t step = 1; step <= 20; ++step) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Tensor g = random_tensor({sizes[i]}, unsigned(1000 * step + i));
      std::memcpy(cpu.grads[i].data<float>(), g.data<float>(), g.nbytes());
      core::copy_bytes(kGpu, gpu.grads[i].raw(), Device::cpu(), g.raw(), g.nbytes());  // the listed storage
    }
    ops::AdamWConfig c = base;
    c.lr = base.lr * float(1.0 - 0.03 * double(step));
    ops::adamw_update(cpu.list, step, c, chunked);
    ops::adamw_update(gpu.list, step, c, chunked);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(sizes[i]));
    EXPECT_LE(scaled_error(on_cpu(gpu.params[i]), cpu.params[i]), 1e-6);
    EXPECT_LE(scaled_error(on_cpu(gpu.m[i]), cpu.m[i]), 1e-6);
    EXPECT_LE(scaled_error(on_cpu(gpu.v[i]), cpu.v[i]), 1e-6);
  }
}

TEST_F(CudaTrainOptimizer, AdamWTwentyStepsMatchTheCpuFused) {
  ops::AdamWConfig c;
  c.lr = 1e-2f, c.weight_decay = 0.1f;
  expect_adamw_steps_match(c, /*chunked=*/true);
}

TEST_F(CudaTrainOptimizer, AdamWTwentyStepsMatchTheCpuEager) {
  ops::AdamWConfig c;
  c.lr = 3e-3f, c.beta1 = 0.8f, c.beta2 = 0.99f, c.eps = 1e-6f, c.weight_decay = 0.f;
  expect_adamw_steps_match(c, /*chunked=*/false);
}

// The optimizer's list is uploaded once; a list whose tensors changed storage is uploaded again
// (a stale record would update the old tensors and leave these as they were).
TEST_F(CudaTrainOptimizer, AdamWFollowsTensorsThatMoved) {
  AdamWState gpu = adamw_state({300}, true);
  ops::AdamWConfig c;
  ops::adamw_update(gpu.list, 1, c, true);
  const Tensor fresh = random_tensor({300}, 7);
  gpu.list.params[0] = on_gpu(fresh);
  AdamWState cpu = adamw_state({300}, false);
  ops::adamw_update(cpu.list, 1, c, true);
  cpu.list.params[0] = fresh;
  ops::adamw_update(cpu.list, 2, c, true);
  ops::adamw_update(gpu.list, 2, c, true);
  EXPECT_LE(scaled_error(on_cpu(gpu.list.params[0]), cpu.list.params[0]), 1e-6);
}

// 20 steps with clipping read inside the update (AdamWClip: the norm left on the device by the
// multi-tensor grad_norm): the CPU's steps within AdamWTwentyStepsMatchTheCpu's 1e-6. The clip
// factor may differ by an ulp where the norms differ in their last bits (ClipByDeviceNormMatchesTheHostForm),
// 6e-8 of each gradient, well inside it. The gradients in memory keep their values on both.
void expect_clipped_adamw_steps_match(bool fused) {
  const std::vector<int64_t> sizes = {1, 37, 300, 70000, 131077, 1000};
  AdamWState cpu = adamw_state(sizes, false), gpu = adamw_state(sizes, true);
  const Tensor cpu_norm = Tensor::zeros({1}, DType::f64), gpu_norm = on_gpu(cpu_norm);
  ops::AdamWConfig c;
  c.lr = 1e-2f, c.weight_decay = 0.1f;
  for (int64_t step = 1; step <= 20; ++step) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Tensor g = random_tensor({sizes[i]}, unsigned(1000 * step + i), step % 5 == 0 ? 1e-4f : 1.0f);
      std::memcpy(cpu.grads[i].data<float>(), g.data<float>(), g.nbytes());
      core::copy_bytes(kGpu, gpu.grads[i].raw(), Device::cpu(), g.raw(), g.nbytes());
    }
    const double max_norm = step % 7 == 0 ? 0.0 : 1.0;  // every fifth step within the limit; some unlimited
    ops::grad_norm(cpu.list, cpu_norm);
    ops::grad_norm(gpu.list, gpu_norm);
    EXPECT_NEAR(on_cpu(gpu_norm).data<double>()[0], cpu_norm.data<double>()[0], 1e-10 * cpu_norm.data<double>()[0])
        << "step " << step;
    ops::adamw_update(cpu.list, step, c, fused, {cpu_norm, max_norm});
    ops::adamw_update(gpu.list, step, c, fused, {gpu_norm, max_norm});
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i) + " of " + std::to_string(sizes[i]));
    EXPECT_LE(scaled_error(on_cpu(gpu.params[i]), cpu.params[i]), 1e-6);
    EXPECT_LE(scaled_error(on_cpu(gpu.m[i]), cpu.m[i]), 1e-6);
    EXPECT_LE(scaled_error(on_cpu(gpu.v[i]), cpu.v[i]), 1e-6);
    EXPECT_EQ(scaled_error(on_cpu(gpu.grads[i]), cpu.grads[i]), 0.0) << "a gradient in memory was scaled";
  }
}

TEST_F(CudaTrainOptimizer, AdamWWithTheClipReadOnTheDeviceMatchesTheCpu) {
  expect_clipped_adamw_steps_match(false);
  expect_clipped_adamw_steps_match(true);
}

// A norm that is not finite, read on the device: nothing moves (the step is skipped, as the CPU skips it).
TEST_F(CudaTrainOptimizer, AdamWSkipsOnTheDeviceWhenTheNormIsNotFinite) {
  AdamWState gpu = adamw_state({300, 70000}, true);
  const AdamWState before = adamw_state({300, 70000}, false);
  Tensor bad = random_tensor({300}, 9);
  bad.data<float>()[17] = INFINITY;
  core::copy_bytes(kGpu, gpu.grads[0].raw(), Device::cpu(), bad.raw(), bad.nbytes());
  const Tensor norm = on_gpu(Tensor::zeros({1}, DType::f64));
  ops::grad_norm(gpu.list, norm);
  EXPECT_TRUE(std::isinf(on_cpu(norm).data<double>()[0]));
  ops::adamw_update(gpu.list, 1, ops::AdamWConfig{}, false, {norm, 1.0});
  for (size_t i = 0; i < gpu.params.size(); ++i) {
    EXPECT_EQ(scaled_error(on_cpu(gpu.params[i]), before.params[i]), 0.0) << "tensor " << i;
    EXPECT_EQ(scaled_error(on_cpu(gpu.m[i]), before.m[i]), 0.0) << "tensor " << i;
  }
}

// One optimizer phase through AdamWOptimizer::clip_and_step (what a training step runs: the norm
// and the update on the device, the norm read back once) against the CPU's, and its skipped step.
TEST_F(CudaTrainOptimizer, ClipAndStepMatchesTheCpu) {
  train::ParameterTable cpu_table(Device::cpu()), gpu_table(kGpu);
  const std::vector<int64_t> sizes = {70000, 257, 131077};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Tensor init = random_tensor({sizes[i]}, unsigned(60 + i));
    cpu_table.add("w" + std::to_string(i), init);
    gpu_table.add("w" + std::to_string(i), init);
  }
  train::AdamWConfig config;
  config.weight_decay = 0.01f;
  train::AdamWOptimizer on_host(cpu_table, config, train::DecayScope::all),
      on_device(gpu_table, config, train::DecayScope::all);
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Tensor g = random_tensor({sizes[i]}, unsigned(500 + 10 * step + i));
      std::memcpy(cpu_table.entries()[i].grad.raw(), g.raw(), g.nbytes());
      core::copy_bytes(kGpu, gpu_table.entries()[i].grad.raw(), Device::cpu(), g.raw(), g.nbytes());
    }
    const double want = on_host.clip_and_step(1e-3, 1.0), got = on_device.clip_and_step(1e-3, 1.0);
    EXPECT_NEAR(got, want, 1e-10 * want) << "step " << step;
  }
  for (size_t i = 0; i < sizes.size(); ++i)
    EXPECT_LE(scaled_error(on_cpu(gpu_table.entries()[i].value), cpu_table.entries()[i].value), 1e-6) << "w" << i;
  Tensor bad = random_tensor({257}, 3);
  bad.data<float>()[0] = NAN;
  core::copy_bytes(kGpu, gpu_table.entries()[1].grad.raw(), Device::cpu(), bad.raw(), bad.nbytes());
  const Tensor before = on_cpu(gpu_table.entries()[0].value);
  EXPECT_TRUE(std::isnan(on_device.clip_and_step(1e-3, 1.0)));
  EXPECT_EQ(on_device.steps(), 3) << "a skipped step is not counted";
  EXPECT_EQ(scaled_error(on_cpu(gpu_table.entries()[0].value), before), 0.0);
}

// ---- gradient norm, clipping, zeroing ------------------------------------------------------

// An undefined entry (a frozen parameter) among odd sizes and two that span several 64K chunks.
std::vector<Tensor> gradient_list(bool gpu) {
  std::vector<Tensor> grads;
  const std::vector<int64_t> sizes = {37, 1, 0, 300, 70000, 131077};
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) {
      grads.emplace_back();
      continue;
    }
    const Tensor g = random_tensor({sizes[i]}, unsigned(40 + i), 0.5f);
    grads.push_back(gpu ? on_gpu(g) : g);
  }
  return grads;
}

// Both sum the squares (exact in double) in other orders: ~200K roundings of 1e-16 each, at most
// 1e-10 of the norm.
TEST_F(CudaTrainOptimizer, GradNormMatchesTheCpuAndRepeatsBitwise) {
  const std::vector<Tensor> cpu = gradient_list(false), gpu = gradient_list(true);
  const double want = ops::grad_norm(cpu);
  const double got = ops::grad_norm(gpu);
  EXPECT_NEAR(got, want, 1e-10 * want);
  EXPECT_TRUE(same_bits(ops::grad_norm(gpu), got)) << "a second run gave other bits";
  const Tensor norm = on_gpu(Tensor::zeros({1}, DType::f64));
  ops::grad_norm(gpu, norm);
  EXPECT_TRUE(same_bits(on_cpu(norm).data<double>()[0], got)) << "the device form differs from the host form";
}

// The clipping step's multi-tensor norm (one launch over the update's chunk records, then the
// fixed-order total) sums the same chunks in the same tree as the list form: its bits, every run,
// and the CPU's norm within GradNormMatchesTheCpuAndRepeatsBitwise's 1e-10.
TEST_F(CudaTrainOptimizer, MultiTensorGradNormIsTheListFormsBits) {
  const std::vector<int64_t> sizes = {37, 1, 300, 70000, 131077};
  const AdamWState cpu = adamw_state(sizes, false), gpu = adamw_state(sizes, true);
  const Tensor norm = on_gpu(Tensor::zeros({1}, DType::f64));
  ops::grad_norm(gpu.list, norm);
  const double got = on_cpu(norm).data<double>()[0];
  EXPECT_TRUE(same_bits(got, ops::grad_norm(gpu.grads))) << "the multi-tensor form differs from the list form";
  ops::grad_norm(gpu.list, norm);
  EXPECT_TRUE(same_bits(on_cpu(norm).data<double>()[0], got)) << "a second run gave other bits";
  const double want = ops::grad_norm(cpu.grads);
  EXPECT_NEAR(got, want, 1e-10 * want);
}

// The same f32 multiply by the same factor on both sides: equal bits.
TEST_F(CudaTrainOptimizer, ClipScalesAsTheCpu) {
  std::vector<Tensor> cpu = gradient_list(false), gpu = gradient_list(true);
  const double norm = ops::grad_norm(cpu);
  ops::clip_grads_to_norm(cpu, norm, 1.0);
  ops::clip_grads_to_norm(gpu, norm, 1.0);
  for (size_t i = 0; i < cpu.size(); ++i)
    if (cpu[i].defined()) { EXPECT_EQ(scaled_error(on_cpu(gpu[i]), cpu[i]), 0.0) << "gradient " << i; }
}

// The device form reads the norm on the device: the host form's result without the round trip.
// The two norms may differ in their last bits, and the f32 factor then by one ulp: 2.5e-7.
TEST_F(CudaTrainOptimizer, ClipByDeviceNormMatchesTheHostForm) {
  std::vector<Tensor> cpu = gradient_list(false), gpu = gradient_list(true);
  ops::clip_grads_to_norm(cpu, ops::grad_norm(cpu), 2.0);
  const Tensor norm = on_gpu(Tensor::zeros({1}, DType::f64));
  ops::grad_norm(gpu, norm);
  ops::clip_grads_to_norm(gpu, norm, 2.0);
  for (size_t i = 0; i < cpu.size(); ++i)
    if (cpu[i].defined()) { EXPECT_LE(scaled_error(on_cpu(gpu[i]), cpu[i]), 2.5e-7) << "gradient " << i; }
}

// Within the limit, or a NaN norm: nothing moves (std::min(1, NaN) is 1, as on the CPU).
TEST_F(CudaTrainOptimizer, ClipByDeviceNormLeavesGradientsWithinTheLimit) {
  std::vector<Tensor> gpu = gradient_list(true);
  const std::vector<Tensor> before = gradient_list(false);
  for (const double value : {1.0, double(NAN)}) {
    Tensor host = Tensor::empty({1}, DType::f64);
    host.data<double>()[0] = value;
    ops::clip_grads_to_norm(gpu, on_gpu(host), 1e9);
    ops::clip_grads_to_norm(gpu, on_gpu(host), 5.0);
  }
  for (size_t i = 0; i < gpu.size(); ++i)
    if (gpu[i].defined()) { EXPECT_EQ(scaled_error(on_cpu(gpu[i]), before[i]), 0.0) << "gradient " << i; }
}

TEST_F(CudaTrainOptimizer, ZeroGradsZeroesEveryDefinedGradient) {
  std::vector<Tensor> gpu = gradient_list(true);
  ops::zero_grads(gpu);
  for (const Tensor& g : gpu) {
    if (!g.defined()) continue;
    const Tensor host = on_cpu(g);
    for (int64_t i = 0; i < host.numel(); ++i) ASSERT_EQ(host.data<float>()[i], 0.0f) << i;
  }
  EXPECT_EQ(ops::grad_norm(gpu), 0.0);
}

// ---- cross-entropy -------------------------------------------------------------------------

// One (R, L) case: the loss, the saved softmax and the gradient accumulated onto a non-zero one.
// The loss: each row's exp in f32 (CUDA's expf is within 2 ulp of the CPU's) summed in double:
// 1e-6 of it. The softmax and the gradient: elementwise f32 work, kElementwiseTol.
void expect_cross_entropy_matches(int64_t R, int64_t L, int64_t ignore_every, float scale) {
  SCOPED_TRACE("R " + std::to_string(R) + ", L " + std::to_string(L));
  const Tensor logits = random_tensor({R, L}, unsigned(R + L), 3.0f),
               labels = labels_of(R, L, unsigned(R), ignore_every);
  const Tensor dstart = random_tensor({R, L}, unsigned(R * L));
  Tensor probs = Tensor::empty({R, L}, DType::f32), dlogits = dstart.to_device(Device::cpu());
  const double want = ops::cross_entropy_forward(probs, logits, labels);
  ops::cross_entropy_backward(dlogits, probs, labels, scale);

  Tensor gprobs = on_gpu(probs), gdlogits = on_gpu(dstart);
  poison(gprobs);
  const Tensor glogits = on_gpu(logits), glabels = on_gpu(labels);
  const double got = ops::cross_entropy_forward(gprobs, glogits, glabels);
  ops::cross_entropy_backward(gdlogits, gprobs, glabels, scale);
  EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want)));
  EXPECT_LE(scaled_error(on_cpu(gprobs), probs), kElementwiseTol);
  EXPECT_LE(scaled_error(on_cpu(gdlogits), dlogits), kElementwiseTol);

  // The device form: the same bits, and again on a second run.
  const Tensor loss = on_gpu(Tensor::zeros({ops::kLossSlots}, DType::f64));
  ops::cross_entropy_forward(loss, gprobs, glogits, glabels);
  EXPECT_TRUE(same_bits(ops::read_cross_entropy_loss(loss), got));
}

TEST_F(CudaTrainOptimizer, CrossEntropyMatchesTheCpu) {
  expect_cross_entropy_matches(1, 2, 0, 1.0f);
  expect_cross_entropy_matches(37, 5, 4, 0.5f);
  expect_cross_entropy_matches(300, 1000, 7, 1.0f);
  expect_cross_entropy_matches(8, 30522, 3, 0.25f);  // a masked LM's vocabulary-wide rows
}

// Every row ignored: the loss is 0 and the gradient stays as it was.
TEST_F(CudaTrainOptimizer, CrossEntropyWithEveryRowIgnored) {
  const int64_t R = 6, L = 9;
  Tensor labels = Tensor::empty({R}, DType::i32);
  for (int64_t i = 0; i < R; ++i) labels.data<int32_t>()[i] = ops::kIgnoreIndex;
  const Tensor logits = random_tensor({R, L}, 3), dstart = random_tensor({R, L}, 4);
  Tensor gprobs = on_gpu(Tensor::empty({R, L}, DType::f32)), gd = on_gpu(dstart);
  const Tensor glabels = on_gpu(labels);
  EXPECT_EQ(ops::cross_entropy_forward(gprobs, on_gpu(logits), glabels), 0.0);
  ops::cross_entropy_backward(gd, gprobs, glabels, 1.0f);
  EXPECT_EQ(scaled_error(on_cpu(gd), dstart), 0.0);
}

// A label outside the head: the CPU's error, from the host form at once and from the device
// form when its loss is read.
TEST_F(CudaTrainOptimizer, CrossEntropyNamesABadLabelAsTheCpu) {
  const int64_t R = 5, L = 4;
  Tensor labels = labels_of(R, L, 9, 0);
  labels.data<int32_t>()[3] = 7;
  const Tensor logits = random_tensor({R, L}, 5);
  Tensor probs = Tensor::empty({R, L}, DType::f32);
  const std::string want = error_of([&] { ops::cross_entropy_forward(probs, logits, labels); });
  ASSERT_NE(want.find("label 7 of row 3"), std::string::npos) << want;
  Tensor gprobs = on_gpu(probs);
  const Tensor glogits = on_gpu(logits), glabels = on_gpu(labels);
  EXPECT_EQ(error_of([&] { ops::cross_entropy_forward(gprobs, glogits, glabels); }), want);
  const Tensor loss = on_gpu(Tensor::zeros({ops::kLossSlots}, DType::f64));
  ops::cross_entropy_forward(loss, gprobs, glogits, glabels);
  EXPECT_EQ(error_of([&] { ops::read_cross_entropy_loss(loss); }), want);
}

// Question answering: B rows of T tokens, the start and end columns interleaved; one ignored end.
TEST_F(CudaTrainOptimizer, SpanCrossEntropyMatchesTheCpu) {
  for (const int64_t B : {1, 3}) {
    const int64_t T = 37;
    SCOPED_TRACE("B " + std::to_string(B));
    const Tensor logits = random_tensor({B * T, 2}, unsigned(B), 2.0f), dstart = random_tensor({B * T, 2}, 77);
    const Tensor start = labels_of(B, T, 11, 0), end = labels_of(B, T, 12, B > 1 ? 2 : 0);
    Tensor probs = Tensor::empty({2, B, T}, DType::f32), dlogits = dstart.to_device(Device::cpu());
    const double want = ops::span_cross_entropy_forward(probs, logits, start, end);
    ops::span_cross_entropy_backward(dlogits, probs, start, end, 0.5f);
    Tensor gprobs = on_gpu(probs), gd = on_gpu(dstart);
    poison(gprobs);
    const Tensor glogits = on_gpu(logits), gstart = on_gpu(start), gend = on_gpu(end);
    const double got = ops::span_cross_entropy_forward(gprobs, glogits, gstart, gend);
    ops::span_cross_entropy_backward(gd, gprobs, gstart, gend, 0.5f);
    EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want)));  // as CrossEntropyMatchesTheCpu
    EXPECT_LE(scaled_error(on_cpu(gprobs), probs), kElementwiseTol);
    EXPECT_LE(scaled_error(on_cpu(gd), dlogits), kElementwiseTol);
  }
}

// ---- MSE, BCE with logits ------------------------------------------------------------------

// Both sum the same double terms in other orders (CUDA's double exp and log1p within an ulp or
// two of glibc's): up to 100K roundings of 1e-16 each, at most 1e-10 of the loss. The backwards
// are f32 elementwise: kElementwiseTol.
TEST_F(CudaTrainOptimizer, ElementwiseLossesMatchTheCpu) {
  for (const int64_t N : {1, 37, 300, 100003}) {
    SCOPED_TRACE("N " + std::to_string(N));
    const Tensor x = random_tensor({N}, unsigned(N), 2.0f), y = random_tensor({N}, unsigned(N + 1));
    Tensor soft = abs_of(random_tensor({N}, unsigned(N + 2), 0.4f));  // BCE's targets in [0, 1]
    for (int64_t i = 0; i < N; ++i) soft.data<float>()[i] = std::fmin(soft.data<float>()[i], 1.0f);
    const Tensor gx = on_gpu(x), gy = on_gpu(y), gsoft = on_gpu(soft), dstart = random_tensor({N}, 5);

    const double mse = ops::mse_forward(x, y), bce = ops::bce_with_logits_forward(x, soft);
    EXPECT_NEAR(ops::mse_forward(gx, gy), mse, 1e-10 * mse);
    EXPECT_NEAR(ops::bce_with_logits_forward(gx, gsoft), bce, 1e-10 * bce);

    Tensor dmse = dstart.to_device(Device::cpu()), dbce = dstart.to_device(Device::cpu());
    Tensor gdmse = on_gpu(dstart), gdbce = on_gpu(dstart);
    ops::mse_backward(dmse, x, y, 0.5f);
    ops::mse_backward(gdmse, gx, gy, 0.5f);
    ops::bce_with_logits_backward(dbce, x, soft, 2.0f);
    ops::bce_with_logits_backward(gdbce, gx, gsoft, 2.0f);
    EXPECT_LE(scaled_error(on_cpu(gdmse), dmse), kElementwiseTol);
    EXPECT_LE(scaled_error(on_cpu(gdbce), dbce), kElementwiseTol);

    // The device forms: the host forms' bits, every run.
    const Tensor loss = on_gpu(Tensor::zeros({1}, DType::f64));
    ops::mse_forward(loss, gx, gy);
    EXPECT_TRUE(same_bits(on_cpu(loss).data<double>()[0], ops::mse_forward(gx, gy)));
    ops::bce_with_logits_forward(loss, gx, gsoft);
    EXPECT_TRUE(same_bits(on_cpu(loss).data<double>()[0], ops::bce_with_logits_forward(gx, gsoft)));
  }
}

// ---- the device forms' arguments, and their CPU path (no GPU needed) ------------------------

TEST(CudaTrainOptimizerChecks, DeviceFormsOnTheCpuGiveTheHostValues) {
  const Tensor logits = random_tensor({7, 5}, 1), labels = labels_of(7, 5, 2, 3);
  Tensor probs = Tensor::empty({7, 5}, DType::f32), loss = Tensor::zeros({ops::kLossSlots}, DType::f64);
  ops::cross_entropy_forward(loss, probs, logits, labels);
  EXPECT_TRUE(same_bits(ops::read_cross_entropy_loss(loss), ops::cross_entropy_forward(probs, logits, labels)));

  const Tensor x = random_tensor({9}, 3), y = random_tensor({9}, 4);
  Tensor one = Tensor::zeros({1}, DType::f64);
  ops::mse_forward(one, x, y);
  EXPECT_TRUE(same_bits(one.data<double>()[0], ops::mse_forward(x, y)));

  std::vector<Tensor> grads = {random_tensor({300}, 5), Tensor(), random_tensor({70000}, 6)};
  ops::grad_norm(grads, one);
  EXPECT_TRUE(same_bits(one.data<double>()[0], ops::grad_norm(grads)));
}

TEST(CudaTrainOptimizerChecks, DeviceFormsNameAWrongLossTensor) {
  const Tensor logits = random_tensor({7, 5}, 1), labels = labels_of(7, 5, 2, 0);
  Tensor probs = Tensor::empty({7, 5}, DType::f32);
  const std::string ce = error_of(
      [&] { ops::cross_entropy_forward(Tensor::zeros({ops::kLossSlots}, DType::f32), probs, logits, labels); });
  EXPECT_NE(ce.find("cross_entropy: loss"), std::string::npos) << ce;
  EXPECT_NE(ce.find("f64"), std::string::npos) << ce;
  const std::string norm = error_of([&] { ops::grad_norm({random_tensor({3}, 1)}, Tensor::zeros({2}, DType::f64)); });
  EXPECT_NE(norm.find("grad_norm: norm"), std::string::npos) << norm;
  const std::string mse = error_of([&] { ops::mse_forward(Tensor(), random_tensor({3}, 1), random_tensor({3}, 2)); });
  EXPECT_NE(mse.find("mse_loss: loss"), std::string::npos) << mse;
}

}  // namespace
}  // namespace tach::test
