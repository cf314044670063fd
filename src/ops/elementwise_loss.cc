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
  if (on_cuda(op, x.device(), DType::f32)) unsupported(op, x.device(), DType::f32);
  return x.numel();
}

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
  const int64_t N = check_operands("mse_loss", pred, {{"target", &target}});
  core::Span span(core::SpanKind::op, "mse_loss");
  declare(span, mse_cost(N, false), N);
  return mse_forward_cpu(pred.data<float>(), target.data<float>(), N);
}

void mse_backward(const Tensor& dpred, const Tensor& pred, const Tensor& target, float scale) {
  const int64_t N = check_operands("mse_loss_backward", dpred, {{"pred", &pred}, {"target", &target}});
  core::Span span(core::SpanKind::op, "mse_loss_backward");
  declare(span, mse_cost(N, true), N);
  mse_backward_cpu(dpred.data<float>(), pred.data<float>(), target.data<float>(), N, scale);
}

double bce_with_logits_forward(const Tensor& logits, const Tensor& target) {
  const int64_t N = check_operands("bce_with_logits", logits, {{"target", &target}});
  core::Span span(core::SpanKind::op, "bce_with_logits");
  declare(span, bce_with_logits_cost(N, false), N);
  return bce_with_logits_forward_cpu(logits.data<float>(), target.data<float>(), N);
}

void bce_with_logits_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& target, float scale) {
  const int64_t N = check_operands("bce_with_logits_backward", dlogits, {{"logits", &logits}, {"target", &target}});
  core::Span span(core::SpanKind::op, "bce_with_logits_backward");
  declare(span, bce_with_logits_cost(N, true), N);
  bce_with_logits_backward_cpu(dlogits.data<float>(), logits.data<float>(), target.data<float>(), N, scale);
}

}  // namespace tach::ops
