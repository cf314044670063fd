// The optimizer's and the losses' ops, and LoRA's training entry points: each checks its
// operands (a mismatch is an error naming the op), refuses a device it has no kernel for, and on
// the CPU gives the numbers of the kernel it dispatches to, bit for bit. The parameter table
// allocates on its device and zeroes through the zero_grad op.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/adamw.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise_loss.h"
#include "ops/grad_norm.h"
#include "ops/lora.h"
#include "tach/memory.h"
#include "tach/profile.h"
#include "test_util.h"
#include "train/grad_norm.h"
#include "train/optimizer.h"
#include "train/parameters.h"

namespace tach {
namespace {

Tensor from(const std::vector<float>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
  return t;
}
Tensor randn_tensor(const Shape& shape, uint32_t seed, float scale = 1.f) {
  return from(test::randn(size_t(shape_numel(shape)), seed, scale), shape);
}
Tensor labels_of(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({int64_t(v.size())}, DType::i32);
  std::memcpy(t.raw(), v.data(), v.size() * sizeof(int32_t));
  return t;
}
// A copy with storage of its own (contiguous() of a contiguous tensor is the tensor itself).
Tensor copy_of(const Tensor& t) {
  Tensor c = Tensor::empty(t.shape(), t.dtype());
  std::memcpy(c.raw(), t.raw(), t.nbytes());
  return c;
}

// A tensor that says it lives on a GPU (its bytes are host memory the ops never reach: the
// checks refuse it first).
Tensor on_gpu(const Tensor& t) {
  return Tensor::from_borrowed(t.raw(), t.shape(), t.dtype(), t.storage(), Device::cuda(0));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_error(const std::function<void()>& fn, const std::string& part) {
  const std::string e = test::error_of(fn);
  EXPECT_NE(e.find(part), std::string::npos) << "error: \"" << e << "\" lacks \"" << part << "\"";
}

// --- AdamW -------------------------------------------------------------------------------------

struct AdamWCase {
  std::vector<Tensor> p, g, m, v;
  std::vector<bool> decay;
  ops::AdamWTensors list() const {
    ops::AdamWTensors t;
    for (size_t i = 0; i < p.size(); ++i) t.add(p[i], g[i], m[i], v[i], decay[i]);
    return t;
  }
};

// Three tensors, one of them longer than a chunk (64K elements) so the chunked pass splits it.
AdamWCase adamw_case() {
  AdamWCase c;
  const std::vector<Shape> shapes = {{70001}, {3, 5}, {1}};
  for (size_t i = 0; i < shapes.size(); ++i) {
    c.p.push_back(randn_tensor(shapes[i], uint32_t(10 + i)));
    c.g.push_back(randn_tensor(shapes[i], uint32_t(20 + i), 0.1f));
    c.m.push_back(randn_tensor(shapes[i], uint32_t(30 + i), 0.01f));
    Tensor v = randn_tensor(shapes[i], uint32_t(40 + i), 0.01f);
    for (int64_t k = 0; k < v.numel(); ++k) v.data<float>()[k] = std::fabs(v.data<float>()[k]);
    c.v.push_back(v);
    c.decay.push_back(i != 1);
  }
  return c;
}

AdamWCase copy_case(const AdamWCase& c) {
  AdamWCase d = c;
  for (auto* list : {&d.p, &d.g, &d.m, &d.v})
    for (auto& t : *list) t = copy_of(t);
  return d;
}

TEST(AdamWOp, EqualsTheKernelBitForBitEagerAndChunked) {
  ops::AdamWConfig config;
  config.lr = 3e-3f;
  config.weight_decay = 0.05f;
  const AdamWCase start = adamw_case();
  AdamWCase eager = copy_case(start), chunked = copy_case(start), kernel = copy_case(start);
  for (int64_t step = 1; step <= 3; ++step) {
    ops::adamw_update(eager.list(), step, config, false);
    ops::adamw_update(chunked.list(), step, config, true);
    for (size_t i = 0; i < kernel.p.size(); ++i)
      ops::adamw_update_cpu(kernel.p[i].data<float>(), kernel.g[i].data<float>(), kernel.m[i].data<float>(),
                            kernel.v[i].data<float>(), kernel.p[i].numel(), step, config, kernel.decay[i]);
  }
  for (size_t i = 0; i < kernel.p.size(); ++i) {
    EXPECT_TRUE(same_bits(eager.p[i], kernel.p[i])) << "tensor " << i;
    EXPECT_TRUE(same_bits(eager.m[i], kernel.m[i])) << "tensor " << i;
    EXPECT_TRUE(same_bits(eager.v[i], kernel.v[i])) << "tensor " << i;
    EXPECT_TRUE(same_bits(chunked.p[i], kernel.p[i])) << "tensor " << i << " (chunked)";
    EXPECT_TRUE(same_bits(chunked.v[i], kernel.v[i])) << "tensor " << i << " (chunked)";
  }
  EXPECT_FALSE(same_bits(eager.p[0], start.p[0])) << "the update moved nothing";
}

// Clipping read inside the update equals clipping the gradients in place and then updating, bit for
// bit, over steps where the clip scales, where it leaves the gradients alone, and without a limit;
// a norm that is not finite moves nothing.
TEST(AdamWOp, ClipReadInTheUpdateEqualsClippingFirst) {
  for (const float decay : {0.0f, 0.05f}) {
    ops::AdamWConfig config;
    config.lr = 3e-3f;
    config.weight_decay = decay;
    const AdamWCase start = adamw_case();
    AdamWCase inside = copy_case(start), first = copy_case(start);
    const ops::AdamWTensors list = inside.list();
    const Tensor norm = Tensor::zeros({1}, DType::f64);
    for (int64_t step = 1; step <= 4; ++step) {
      const double max_norm = step == 1 ? 0.5 : step == 2 ? 1e9 : step == 3 ? 0.0 : 2.0;
      ops::grad_norm(list, norm);
      ops::adamw_update(list, step, config, step % 2 == 0, {norm, max_norm});
      std::vector<Tensor> grads = first.g;
      const double want = train::clip_grad_norm(grads, max_norm);
      EXPECT_EQ(norm.data<double>()[0], want) << "step " << step;
      ops::adamw_update(first.list(), step, config, false);
      for (size_t i = 0; i < start.g.size(); ++i) first.g[i] = copy_of(start.g[i]);  // unclipped again
    }
    for (size_t i = 0; i < start.p.size(); ++i) {
      EXPECT_TRUE(same_bits(inside.p[i], first.p[i])) << "tensor " << i << " decay " << decay;
      EXPECT_TRUE(same_bits(inside.m[i], first.m[i])) << "tensor " << i << " decay " << decay;
      EXPECT_TRUE(same_bits(inside.v[i], first.v[i])) << "tensor " << i << " decay " << decay;
      EXPECT_TRUE(same_bits(inside.g[i], start.g[i])) << "the gradients in memory keep their values";
    }
    norm.data<double>()[0] = std::nan("");
    const AdamWCase before = copy_case(inside);
    ops::adamw_update(list, 5, config, false, {norm, 1.0});
    for (size_t i = 0; i < start.p.size(); ++i)
      EXPECT_TRUE(same_bits(inside.p[i], before.p[i]) && same_bits(inside.m[i], before.m[i]))
          << "a NaN norm moved " << i;
  }
}

// Eager AdamW is one op over every tensor (PyTorch's foreach form): one span, with every element's
// cost, where it was one span per tensor.
TEST(AdamWOp, OneSpanForTheWholeUpdateWithItsCost) {
  const AdamWCase c = adamw_case();
  const ops::AdamWTensors list = c.list();
  ProfilerOptions o;
  o.schedule = ProfileSchedule{0, 0, 0, 1, 0};
  o.gpu_activity = false;
  o.memory_logging = false;
  Profiler profiler(o);
  profiler.start();
  ops::adamw_update(list, 1, ops::AdamWConfig{}, false);
  ops::adamw_update(list, 2, ops::AdamWConfig{}, true);
  profiler.step();
  profiler.stop();
  std::vector<std::string> names;
  for (const ProfileEvent& e : profiler.data().events) {
    if (e.kind != EventKind::op) continue;
    names.push_back(e.name);
    EXPECT_EQ(e.bytes, ops::adamw_cost(list.elements).bytes()) << e.name;
    EXPECT_EQ(e.flops, ops::adamw_cost(list.elements).flops) << e.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"adamw", "adamw_fused"}));
}

TEST(AdamWOp, MismatchesAreErrorsNamingTheOp) {
  const AdamWCase c = adamw_case();
  const ops::AdamWConfig config;
  {
    ops::AdamWTensors t = c.list();
    t.m[1] = Tensor::zeros({4, 3}, DType::f32);
    expect_error([&] { ops::adamw_update(t, 1, config, false); },
                 "adamw: exp_avg f32[4, 3] cpu must be a contiguous f32 tensor of 15 elements");
  }
  {
    ops::AdamWTensors t = c.list();
    t.grads[2] = Tensor::zeros({1}, DType::f16);
    expect_error([&] { ops::adamw_update(t, 1, config, false); }, "adamw: gradient f16[1] cpu must be");
  }
  {
    ops::AdamWTensors t = c.list();
    t.v.pop_back();
    expect_error([&] { ops::adamw_update(t, 1, config, true); }, "adamw: 3 parameters listed with 3 gradients");
  }
  {
    ops::AdamWTensors t = c.list();
    t.grads[0] = on_gpu(t.grads[0]);
    expect_error([&] { ops::adamw_update(t, 1, config, false); }, "adamw: ");
    expect_error([&] { ops::adamw_update(t, 1, config, false); }, "is not on cpu");
  }
#if !TACH_HAS_CUDA
  // Without the CUDA backend a CUDA tensor is refused, naming the op (with it, the update runs on
  // the GPU: tests/cuda_train/optimizer.cc; these tensors' bytes are host memory no kernel may read).
  {
    ops::AdamWTensors t;
    t.add(on_gpu(c.p[2]), on_gpu(c.g[2]), on_gpu(c.m[2]), on_gpu(c.v[2]), true);
    expect_error([&] { ops::adamw_update(t, 1, config, false); }, "adamw: no kernel for device cuda:0");
  }
#endif
  expect_error([&] { ops::adamw_update(c.list(), 0, config, false); }, "adamw: step counts from 1");
}

// --- gradient norm, clipping, zeroing ----------------------------------------------------------

TEST(GradOps, NormEqualsTheKernelAndClipScalesAsTorch) {
  std::vector<Tensor> grads = {randn_tensor({70000}, 1), Tensor(), randn_tensor({7}, 2)};
  ops::GradSpans spans = {{grads[0].data<float>(), grads[0].numel()}, {grads[2].data<float>(), grads[2].numel()}};
  const double norm = ops::grad_norm(grads);
  EXPECT_EQ(norm, ops::grad_norm_cpu(spans)) << "bit for bit, the frozen (undefined) entry skipped";
  const Tensor before = copy_of(grads[2]);
  ops::clip_grads_to_norm(grads, norm, norm * 4);
  EXPECT_TRUE(same_bits(grads[2], before)) << "within the limit nothing moves";
  ops::clip_grads_to_norm(grads, norm, 1.0);
  const float coef = float(1.0 / (norm + 1e-6));
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(grads[2].data<float>()[i], before.data<float>()[i] * coef);
  ops::zero_grads(grads);
  EXPECT_EQ(ops::grad_norm(grads), 0.0);
}

// The clipping step's norm over the update's chunk records equals the list form bit for bit.
TEST(GradOps, MultiTensorNormEqualsTheListForm) {
  const AdamWCase c = adamw_case();
  const ops::AdamWTensors list = c.list();
  const Tensor norm = Tensor::zeros({1}, DType::f64);
  ops::grad_norm(list, norm);
  EXPECT_EQ(norm.data<double>()[0], ops::grad_norm(c.g));
  EXPECT_GT(norm.data<double>()[0], 0.0);
  expect_error([&] { ops::grad_norm(list, Tensor::zeros({2}, DType::f64)); }, "grad_norm: norm f64[2]");
  ops::AdamWTensors missing = c.list();
  missing.grads[1] = Tensor();
  expect_error([&] { ops::grad_norm(missing, norm); }, "grad_norm: gradient (undefined) must be its parameter's size");
}

// The optimizer's clipping step (what a training step runs) equals torch's order, clip_grad_norm_
// then step(), as the separate calls give it: the same norms and weights bit for bit over steps,
// eager and fused; a step whose norm is not finite updates nothing and counts no step.
TEST(GradOps, OptimizerClipAndStepEqualsClipThenStep) {
  for (const bool fused : {false, true}) {
    train::ParameterTable one, two;
    const std::vector<std::pair<std::string, Shape>> shapes = {{"encoder.weight", {300, 257}},
                                                               {"encoder.bias", {257}},
                                                               {"LayerNorm.weight", {257}}};
    for (size_t i = 0; i < shapes.size(); ++i) {
      const Tensor init = randn_tensor(shapes[i].second, uint32_t(50 + i));
      for (train::ParameterTable* t : {&one, &two}) t->add(shapes[i].first, copy_of(init)).decay = i == 0;
    }
    train::AdamWConfig config;
    config.weight_decay = 0.01f;
    train::AdamWOptimizer a(one, config, train::DecayScope::trainer, fused),
        b(two, config, train::DecayScope::trainer, fused);
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < shapes.size(); ++i) {
        const Tensor g = randn_tensor(shapes[i].second, uint32_t(100 * step + i), step == 2 ? 1e-4f : 0.5f);
        std::memcpy(one.entries()[i].grad.raw(), g.raw(), g.nbytes());
        std::memcpy(two.entries()[i].grad.raw(), g.raw(), g.nbytes());
      }
      const double lr = 1e-3 * (step + 1);
      const double got = a.clip_and_step(lr, 1.0);
      const double want = train::clip_grad_norm(b.grads(), 1.0);
      b.step(lr);
      EXPECT_EQ(got, want) << "step " << step;
    }
    EXPECT_EQ(a.steps(), 4);
    for (size_t i = 0; i < shapes.size(); ++i)
      EXPECT_TRUE(same_bits(one.entries()[i].value, two.entries()[i].value)) << shapes[i].first << " fused " << fused;
    one.entries()[1].grad.data<float>()[3] = INFINITY;
    const Tensor before = copy_of(one.entries()[0].value);
    EXPECT_FALSE(std::isfinite(a.clip_and_step(1e-3, 1.0)));
    EXPECT_EQ(a.steps(), 4) << "a skipped step is not counted";
    EXPECT_TRUE(same_bits(one.entries()[0].value, before)) << "a step with an infinite norm moved a weight";
  }
}

TEST(GradOps, MismatchesAreErrorsNamingTheOp) {
  const Tensor g = randn_tensor({4}, 3);
  expect_error(
      [&] {
        ops::grad_norm({g, Tensor::zeros({2}, DType::bf16)});
      },
      "grad_norm: gradient bf16[2] cpu must be contiguous f32");
  expect_error([&] { ops::zero_grads({g, on_gpu(g)}); }, "zero_grad: ");
  expect_error([&] { ops::clip_grads_to_norm({g, on_gpu(g)}, 1.0, 0.5); }, "clip_grad_norm: ");
#if !TACH_HAS_CUDA
  // Without the CUDA backend (with it: tests/cuda_train/optimizer.cc).
  expect_error([&] { ops::grad_norm({on_gpu(g)}); }, "grad_norm: no kernel for device cuda:0");
#endif
}

// --- losses ------------------------------------------------------------------------------------

TEST(CrossEntropyOp, EqualsTheKernelBitForBit) {
  const int64_t R = 4, L = 37;
  const Tensor logits = randn_tensor({R, L}, 5, 3.f);
  const Tensor labels = labels_of({3, ops::kIgnoreIndex, 36, 0});
  const Tensor probs = Tensor::empty({R, L}, DType::f32), ref = Tensor::empty({R, L}, DType::f32);
  const double loss = ops::cross_entropy_forward(probs, logits, labels);
  EXPECT_EQ(loss, ops::cross_entropy_forward_cpu(ref.data<float>(), logits.data<float>(), L, 1, labels.data<int32_t>(),
                                                 R, L));
  EXPECT_TRUE(same_bits(probs, ref));
  const Tensor d = randn_tensor({R, L}, 6), d_ref = copy_of(d);
  ops::cross_entropy_backward(d, probs, labels, 0.25f);
  ops::cross_entropy_backward_cpu(d_ref.data<float>(), L, 1, ref.data<float>(), labels.data<int32_t>(), R, L, 0.25f);
  EXPECT_TRUE(same_bits(d, d_ref));
}

// Question answering's pair reads the start and end columns in place: the same bits as copying
// each column out and running the row kernel on it, as the loss did before it was an op.
TEST(CrossEntropyOp, SpanPairEqualsTheColumnsCopiedOut) {
  const int64_t B = 3, T = 9;
  const Tensor logits = randn_tensor({B * T, 2}, 7, 2.f);
  const Tensor start = labels_of({4, ops::kIgnoreIndex, 0}), end = labels_of({8, 2, ops::kIgnoreIndex});
  const Tensor probs = Tensor::empty({2, B, T}, DType::f32);
  const double loss = ops::span_cross_entropy_forward(probs, logits, start, end);
  const Tensor d = Tensor::zeros({B * T, 2}, DType::f32);
  ops::span_cross_entropy_backward(d, probs, start, end, 0.5f);
  double want = 0;
  for (int c = 0; c < 2; ++c) {
    std::vector<float> column(size_t(B * T)), p(size_t(B * T)), dc(size_t(B * T), 0.f);
    for (int64_t i = 0; i < B * T; ++i) column[size_t(i)] = logits.data<float>()[i * 2 + c];
    const Tensor& y = c == 0 ? start : end;
    want += ops::cross_entropy_forward_cpu(p.data(), column.data(), T, 1, y.data<int32_t>(), B, T);
    ops::cross_entropy_backward_cpu(dc.data(), T, 1, p.data(), y.data<int32_t>(), B, T, 0.25f);
    for (int64_t i = 0; i < B * T; ++i) {
      EXPECT_EQ(probs.data<float>()[c * B * T + i], p[size_t(i)]) << "column " << c << " token " << i;
      EXPECT_EQ(d.data<float>()[i * 2 + c], 0.f + dc[size_t(i)]) << "column " << c << " token " << i;
    }
  }
  EXPECT_EQ(loss, want / 2);
}

TEST(CrossEntropyOp, MismatchesAreErrorsNamingTheOp) {
  const Tensor logits = randn_tensor({2, 3}, 8), probs = Tensor::empty({2, 3}, DType::f32);
  expect_error(
      [&] {
        ops::cross_entropy_forward(probs, logits, from({0, 1}, {2}));
      },
      "cross_entropy: labels f32[2] cpu must be a contiguous i32 [2]");
  expect_error(
      [&] {
        ops::cross_entropy_forward(Tensor::empty({3, 2}, DType::f32), logits, labels_of({0, 1}));
      },
      "cross_entropy: probs f32[3, 2] cpu must be a contiguous f32 [2, 3]");
  expect_error(
      [&] {
        ops::cross_entropy_backward(logits.reshape({6}), probs, labels_of({0, 1}), 1.f);
      },
      "cross_entropy_backward: dlogits f32[6] cpu must be a contiguous f32 [rows, labels]");
  expect_error([&] { ops::cross_entropy_forward(probs, logits, on_gpu(labels_of({0, 1}))); }, "is not on cpu");
#if !TACH_HAS_CUDA
  // Without the CUDA backend (with it, the loss runs on the GPU: tests/cuda_train).
  expect_error(
      [&] {
        ops::cross_entropy_forward(on_gpu(probs), on_gpu(logits), on_gpu(labels_of({0, 1})));
      },
      "cross_entropy: no kernel for device cuda:0");
#endif
  const Tensor pairs = randn_tensor({3, 2}, 9);  // one row of 3 tokens
  expect_error(
      [&] {
        ops::span_cross_entropy_forward(Tensor::empty({2, 1, 3}, DType::f32), pairs, labels_of({0}), labels_of({0, 1}));
      },
      "cross_entropy: end positions i32[2] cpu must be a contiguous i32 [1]");
  expect_error(
      [&] {
        ops::span_cross_entropy_forward(Tensor::empty({2, 1, 3}, DType::f32), logits, labels_of({0}), labels_of({0}));
      },
      "cross_entropy: logits f32[2, 3] cpu must be a contiguous f32 [1 * tokens, 2] (start, end)");
}

TEST(ElementwiseLossOps, EqualTheKernelsAndNameTheOpOnMismatch) {
  const Tensor x = randn_tensor({6}, 9, 2.f), y = randn_tensor({6}, 10);
  EXPECT_EQ(ops::mse_forward(x, y), ops::mse_forward_cpu(x.data<float>(), y.data<float>(), 6));
  EXPECT_EQ(ops::bce_with_logits_forward(x, y), ops::bce_with_logits_forward_cpu(x.data<float>(), y.data<float>(), 6));
  const Tensor d = randn_tensor({6}, 11), d_ref = copy_of(d);
  ops::mse_backward(d, x, y, 0.5f);
  ops::bce_with_logits_backward(d, x, y, 0.5f);
  ops::mse_backward_cpu(d_ref.data<float>(), x.data<float>(), y.data<float>(), 6, 0.5f);
  ops::bce_with_logits_backward_cpu(d_ref.data<float>(), x.data<float>(), y.data<float>(), 6, 0.5f);
  EXPECT_TRUE(same_bits(d, d_ref));
  expect_error([&] { ops::mse_forward(x, randn_tensor({5}, 1)); },
               "mse_loss: target f32[5] cpu must be a contiguous f32 tensor of 6 elements");
  expect_error(
      [&] {
        ops::bce_with_logits_backward(d, x, labels_of({0, 1, 0, 1, 0, 1}), 1.f);
      },
      "bce_with_logits_backward: target i32[6] cpu");
  expect_error([&] { ops::mse_backward(d, x, on_gpu(y), 1.f); }, "mse_loss_backward: ");
}

// --- LoRA --------------------------------------------------------------------------------------

struct LoraCase {
  ops::LoraShape s;
  Tensor x, A, B, out, xa, scratch;
  int64_t ldy = 0, row0 = 0;
};

// An adapter on the middle block of a wider output [M, ldy], as on the fused q|k|v linear.
LoraCase lora_case(float dropout) {
  LoraCase c;
  c.s.M = 5, c.s.K = 6, c.s.N = 4, c.s.r = 2, c.s.scale = 2.f, c.s.dropout = dropout, c.s.dropout_key = 77;
  c.ldy = 12, c.row0 = 4;
  c.x = randn_tensor({c.s.M, c.s.K}, 12);
  c.A = randn_tensor({c.s.r, c.s.K}, 13);
  c.B = randn_tensor({c.s.N, c.s.r}, 14);
  c.out = randn_tensor({c.s.M, c.ldy}, 15);
  c.xa = Tensor::empty({c.s.M, c.s.r}, DType::f32);
  c.scratch = Tensor::empty({c.s.M * c.s.K + c.s.M * c.s.r}, DType::f32);
  return c;
}

TEST(LoraOps, ForwardAndBackwardEqualTheKernelsOnAColumnBlock) {
  for (const float dropout : {0.f, 0.3f}) {
    LoraCase c = lora_case(dropout);
    const Tensor out_ref = copy_of(c.out), xa_ref = Tensor::empty({c.s.M, c.s.r}, DType::f32);
    const Tensor scratch_ref = Tensor::empty({c.scratch.numel()}, DType::f32);
    ops::lora_forward_train(c.out.narrow(1, c.row0, c.s.N), c.xa, c.x, c.A, c.B, c.s, c.scratch);
    ops::lora_forward_cpu(out_ref.data<float>() + c.row0, c.ldy, xa_ref.data<float>(), c.x.data<float>(),
                          c.A.data<float>(), c.B.data<float>(), c.s, scratch_ref.data<float>());
    EXPECT_TRUE(same_bits(c.out, out_ref)) << "dropout " << dropout;
    EXPECT_TRUE(same_bits(c.xa, xa_ref)) << "dropout " << dropout;

    const Tensor dy = randn_tensor({c.s.M, c.ldy}, 16);
    const Tensor dx = randn_tensor({c.s.M, c.s.K}, 17), dA = randn_tensor({c.s.r, c.s.K}, 18),
                 dB = randn_tensor({c.s.N, c.s.r}, 19);
    const Tensor dx_ref = copy_of(dx), dA_ref = copy_of(dA), dB_ref = copy_of(dB);
    ops::lora_backward(dx, dA, dB, dy.narrow(1, c.row0, c.s.N), c.x, c.xa, c.A, c.B, c.s, c.scratch);
    ops::lora_backward_cpu(dx_ref.data<float>(), dA_ref.data<float>(), dB_ref.data<float>(), dy.data<float>() + c.row0,
                           c.ldy, c.x.data<float>(), xa_ref.data<float>(), c.A.data<float>(), c.B.data<float>(), c.s,
                           scratch_ref.data<float>());
    EXPECT_TRUE(same_bits(dx, dx_ref)) << "dropout " << dropout;
    EXPECT_TRUE(same_bits(dA, dA_ref)) << "dropout " << dropout;
    EXPECT_TRUE(same_bits(dB, dB_ref)) << "dropout " << dropout;
    // Nothing upstream trains: no dx, the rest the same.
    const Tensor dA2 = Tensor::zeros({c.s.r, c.s.K}, DType::f32), dA2_ref = copy_of(dA2);
    ops::lora_backward(Tensor(), dA2, copy_of(dB), dy.narrow(1, c.row0, c.s.N), c.x, c.xa, c.A, c.B, c.s, c.scratch);
    ops::lora_backward_cpu(nullptr, dA2_ref.data<float>(), copy_of(dB).data<float>(), dy.data<float>() + c.row0, c.ldy,
                           c.x.data<float>(), xa_ref.data<float>(), c.A.data<float>(), c.B.data<float>(), c.s,
                           scratch_ref.data<float>());
    EXPECT_TRUE(same_bits(dA2, dA2_ref)) << "dropout " << dropout;
  }
}

TEST(LoraOps, MismatchesAreErrorsNamingTheOp) {
  LoraCase c = lora_case(0.f);
  const Tensor y = c.out.narrow(1, c.row0, c.s.N);
  expect_error([&] { ops::lora_forward_train(y, c.xa, c.x, c.B, c.B, c.s, c.scratch); },
               "lora: A f32[4, 2] cpu must be a contiguous f32 [2, 6]");
  expect_error([&] { ops::lora_forward_train(c.out, c.xa, c.x, c.A, c.B, c.s, c.scratch); }, "lora: y");
  expect_error([&] { ops::lora_forward_train(y, c.xa, on_gpu(c.x), c.A, c.B, c.s, c.scratch); }, "lora: ");
  expect_error(
      [&] { ops::lora_backward(Tensor(), c.A, c.B, y, c.x, c.xa, c.A, c.B, c.s, Tensor::empty({3}, DType::f32)); },
      "lora_backward: scratch");
  expect_error([&] { ops::lora_backward(c.x, c.A, c.A, y, c.x, c.xa, c.A, c.B, c.s, c.scratch); }, "lora_backward: dB");
}

// --- the parameter table -----------------------------------------------------------------------

TEST(ParameterTableDevice, AllocatesOnItsDeviceAndZeroesThroughTheOp) {
  train::ParameterTable table(Device::cpu());
  EXPECT_EQ(table.device(), Device::cpu());
  const int64_t before = memory_stats(Device::cpu()).by_category[int(MemoryCategory::gradients)].current;
  train::Parameter& w = table.add("w", randn_tensor({3, 4}, 20));
  const train::FusedTensor f =
      table.add_fused("qk", {{"q", randn_tensor({2, 4}, 21)}, {"k", randn_tensor({1, 4}, 22)}});
  EXPECT_EQ(w.value.device(), table.device());
  EXPECT_EQ(f.value.device(), table.device());
  EXPECT_EQ(memory_stats(Device::cpu()).by_category[int(MemoryCategory::gradients)].current - before,
            int64_t((12 + 12) * sizeof(float)))
      << "one gradient per parameter, the fused parts' being views";
  EXPECT_TRUE(same_bits(table.at("k").value, randn_tensor({1, 4}, 22)));
  for (auto& p : table.entries())
    for (int64_t i = 0; i < p.grad.numel(); ++i) p.grad.data<float>()[i] = 1.f;
  table.zero_grad();
  for (auto& p : table.entries())
    for (int64_t i = 0; i < p.grad.numel(); ++i) EXPECT_EQ(p.grad.data<float>()[i], 0.f) << p.name;
}

}  // namespace
}  // namespace tach
