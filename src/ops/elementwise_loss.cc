#include "ops/elementwise_loss.h"

#include <string>
#include <utility>

#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

namespace {

// Every operand: contiguous f32 of x's element count, on x's device. Returns that count. Allocates
// nothing unless it fails (ops/train_checks.h).
int64_t check_operands(const char* op, const Tensor& x,
                       std::initializer_list<std::pair<const char*, const Tensor*>> others) {
  if (!x.defined() || x.dtype() != DType::f32 || !dense(x)) bad_tensor(op, "outputs", x, "contiguous f32");
  for (const auto& [name, t] : others) {
    expect_f32(op, name, *t, x.numel());
    check_device(op, x.device(), {t});
  }
  return x.numel();
}

// The double-returning form on a device: the loss-tensor form, then one copy back.
double device_loss(const Tensor& x, const Tensor& target,
                   void (*forward)(const Tensor&, const Tensor&, const Tensor&)) {
  const Tensor loss = Tensor::empty({1}, DType::f64, x.device(), MemoryCategory::workspace);
  forward(loss, x, target);
  return loss.to_device(Device::cpu()).data<double>()[0];
}

#if TACH_HAS_CUDA
Tensor partials_for(int64_t N, Device device) {
  return Tensor::empty({elementwise_loss_partials(N)}, DType::f64, device, MemoryCategory::workspace);
}
#endif

void declare(core::Span& span, const OpCost& c, int64_t N) {
  if (!span.active()) return;
  span.set_cost(c.flops, c.bytes());
  span.set_detail(core::concat("[", N, "] f32"));
}

}  // namespace

OpCost mse_cost(int64_t N, bool backward) {
  OpCost c;
  c.flops = 3.0 * double(N);
  c.bytes_read = 8.0 * double(N) + (backward ? 4.0 * double(N) : 0.0);
  c.bytes_written = backward ? 4.0 * double(N) : 0.0;
  return c;
}

OpCost bce_with_logits_cost(int64_t N, bool backward) {
  OpCost c;
  c.flops = (backward ? 6.0 : 8.0) * double(N);  // exp and log1p (or the sigmoid) counted as one each
  c.bytes_read = 8.0 * double(N) + (backward ? 4.0 * double(N) : 0.0);
  c.bytes_written = backward ? 4.0 * double(N) : 0.0;
  return c;
}

double mse_forward(const Tensor& pred, const Tensor& target) {
  if (pred.defined() && on_cuda("mse_loss", pred.device(), DType::f32)) return device_loss(pred, target, mse_forward);
  const int64_t N = check_operands("mse_loss", pred, {{"target", &target}});
  core::Span span(core::SpanKind::op, "mse_loss");
  declare(span, mse_cost(N, false), N);
  return mse_forward_cpu(pred.data<float>(), target.data<float>(), N);
}

void mse_forward(const Tensor& loss, const Tensor& pred, const Tensor& target) {
  const int64_t N = check_operands("mse_loss", pred, {{"target", &target}});
  expect_f64_on("mse_loss", "loss", loss, 1, pred.device());
  if (!on_cuda("mse_loss", pred.device(), DType::f32)) {
    loss.data<double>()[0] = mse_forward(pred, target);
    return;
  }
  core::Span span(core::SpanKind::op, "mse_loss");
  declare(span, mse_cost(N, false), N);
#if TACH_HAS_CUDA
  const Tensor partials = partials_for(N, pred.device());
  mse_forward_cuda(pred.device().index, pred.data<float>(), target.data<float>(), N, partials.data<double>(),
                   loss.data<double>());
#endif
}

void mse_backward(const Tensor& dpred, const Tensor& pred, const Tensor& target, float scale) {
  const int64_t N = check_operands("mse_loss_backward", dpred, {{"pred", &pred}, {"target", &target}});
  const bool cuda = on_cuda("mse_loss_backward", dpred.device(), DType::f32);
  core::Span span(core::SpanKind::op, "mse_loss_backward");
  declare(span, mse_cost(N, true), N);
  if (cuda) {
#if TACH_HAS_CUDA
    mse_backward_cuda(dpred.device().index, dpred.data<float>(), pred.data<float>(), target.data<float>(), N, scale);
#endif
    return;
  }
  mse_backward_cpu(dpred.data<float>(), pred.data<float>(), target.data<float>(), N, scale);
}

double bce_with_logits_forward(const Tensor& logits, const Tensor& target) {
  if (logits.defined() && on_cuda("bce_with_logits", logits.device(), DType::f32))
    return device_loss(logits, target, bce_with_logits_forward);
  const int64_t N = check_operands("bce_with_logits", logits, {{"target", &target}});
  core::Span span(core::SpanKind::op, "bce_with_logits");
  declare(span, bce_with_logits_cost(N, false), N);
  return bce_with_logits_forward_cpu(logits.data<float>(), target.data<float>(), N);
}

void bce_with_logits_forward(const Tensor& loss, const Tensor& logits, const Tensor& target) {
  const int64_t N = check_operands("bce_with_logits", logits, {{"target", &target}});
  expect_f64_on("bce_with_logits", "loss", loss, 1, logits.device());
  if (!on_cuda("bce_with_logits", logits.device(), DType::f32)) {
    loss.data<double>()[0] = bce_with_logits_forward(logits, target);
    return;
  }
  core::Span span(core::SpanKind::op, "bce_with_logits");
  declare(span, bce_with_logits_cost(N, false), N);
#if TACH_HAS_CUDA
  const Tensor partials = partials_for(N, logits.device());
  bce_with_logits_forward_cuda(logits.device().index, logits.data<float>(), target.data<float>(), N,
                               partials.data<double>(), loss.data<double>());
#endif
}

void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& target, float scale) {
  const int64_t N = check_operands("bce_with_logits_backward", dlogits, {{"logits", &logits}, {"target", &target}});
  const bool cuda = on_cuda("bce_with_logits_backward", dlogits.device(), DType::f32);
  core::Span span(core::SpanKind::op, "bce_with_logits_backward");
  declare(span, bce_with_logits_cost(N, true), N);
  if (cuda) {
#if TACH_HAS_CUDA
    bce_with_logits_backward_cuda(dlogits.device().index, dlogits.data<float>(), logits.data<float>(),
                                  target.data<float>(), N, scale);
#endif
    return;
  }
  bce_with_logits_backward_cpu(dlogits.data<float>(), logits.data<float>(), target.data<float>(), N, scale);
}

}  // namespace tach::ops
