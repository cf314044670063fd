#include "ops/grad_norm.h"

#include <algorithm>
#include <string>

#include "core/allocator.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

namespace {

// Checks the list and says where it lives and how many elements it holds (undefined entries,
// a frozen parameter's absent gradient, are skipped).
struct GradList {
  Device device = Device::cpu();
  int64_t elements = 0;
};

GradList check_grads(const char* op, const std::vector<Tensor>& grads) {
  GradList l;
  bool first = true;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    if (g.dtype() != DType::f32 || !dense(g)) bad_tensor(op, "gradient", g, "contiguous f32");
    if (first) l.device = g.device(), first = false;
    check_device(op, l.device, {&g});
    l.elements += g.numel();
  }
  return l;
}

GradSpans spans_of(const std::vector<Tensor>& grads) {
  GradSpans s;
  s.reserve(grads.size());
  for (const Tensor& g : grads)
    if (g.defined()) s.emplace_back(g.data<float>(), g.numel());
  return s;
}

void declare(core::Span& span, const OpCost& c) {
  if (span.active()) span.set_cost(c.flops, c.bytes());
}

}  // namespace

OpCost grad_norm_cost(int64_t n) {
  OpCost c;
  c.flops = 2.0 * double(n);
  c.bytes_read = 4.0 * double(n);
  return c;
}

OpCost clip_grads_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = c.bytes_written = 4.0 * double(n);
  return c;
}

OpCost zero_grads_cost(int64_t n) {
  OpCost c;
  c.bytes_written = 4.0 * double(n);
  return c;
}

double grad_norm(const std::vector<Tensor>& grads) {
  const GradList l = check_grads("grad_norm", grads);
  if (on_cuda("grad_norm", l.device, DType::f32)) unsupported("grad_norm", l.device, DType::f32);
  core::Span span(core::SpanKind::op, "grad_norm");
  declare(span, grad_norm_cost(l.elements));
  return grad_norm_cpu(spans_of(grads));
}

void clip_grads_to_norm(const std::vector<Tensor>& grads, double norm, double max_norm) {
  const GradList l = check_grads("clip_grad_norm", grads);
  if (on_cuda("clip_grad_norm", l.device, DType::f32)) unsupported("clip_grad_norm", l.device, DType::f32);
  core::Span span(core::SpanKind::op, "clip_grad_norm");
  declare(span, clip_grads_cost(l.elements));
  const float coef = float(std::min(1.0, max_norm / (norm + 1e-6)));
  if (coef >= 1.0f) return;
  for (const Tensor& g : grads)
    if (g.defined()) scale_cpu(g.data<float>(), g.numel(), coef);
}

void zero_grads(const std::vector<Tensor>& grads) {
  const GradList l = check_grads("zero_grad", grads);
  core::Span span(core::SpanKind::op, "zero_grad");
  declare(span, zero_grads_cost(l.elements));
  // The allocator's fill is every device's zeroing (a memset on the CPU): no kernel of its own.
  for (const Tensor& g : grads)
    if (g.defined()) core::zero_bytes(l.device, g.raw(), g.nbytes());
}

}  // namespace tach::ops
