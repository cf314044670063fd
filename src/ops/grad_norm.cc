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
  bool any = false;  // a defined gradient (else device is only the default)
};

GradList check_grads(const char* op, const std::vector<Tensor>& grads) {
  GradList l;
  bool first = true;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    if (g.dtype() != DType::f32 || !dense(g)) bad_tensor(op, "gradient", g, "contiguous f32");
    if (first) l.device = g.device(), first = false, l.any = true;
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

#if TACH_HAS_CUDA
namespace {

// The norm of l's gradients into norm (f64 [1] on their device): one partial per 64K chunk, then a
// fixed-order total.
void grad_norm_on_cuda(const std::vector<Tensor>& grads, const GradList& l, double* norm) {
  int64_t count = 0;
  for (const Tensor& g : grads)
    if (g.defined()) count += (g.numel() + kGradNormChunk - 1) / kGradNormChunk;
  const Tensor partials = Tensor::empty({std::max<int64_t>(count, 1)}, DType::f64, l.device, MemoryCategory::workspace);
  double* p = partials.data<double>();
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    grad_norm_partials_cuda(l.device.index, g.data<float>(), g.numel(), p);
    p += (g.numel() + kGradNormChunk - 1) / kGradNormChunk;
  }
  grad_norm_finish_cuda(l.device.index, partials.data<double>(), count, norm);
}

}  // namespace
#endif

double grad_norm(const std::vector<Tensor>& grads) {
  const GradList l = check_grads("grad_norm", grads);
  if (on_cuda("grad_norm", l.device, DType::f32)) {
    const Tensor norm = Tensor::empty({1}, DType::f64, l.device, MemoryCategory::workspace);
    grad_norm(grads, norm);
    return norm.to_device(Device::cpu()).data<double>()[0];  // the one synchronisation
  }
  core::Span span(core::SpanKind::op, "grad_norm");
  declare(span, grad_norm_cost(l.elements));
  return grad_norm_cpu(spans_of(grads));
}

void grad_norm(const std::vector<Tensor>& grads, const Tensor& norm) {
  GradList l = check_grads("grad_norm", grads);
  if (!l.any && norm.defined()) l.device = norm.device();  // nothing trains: a norm of 0 where asked
  expect_f64_on("grad_norm", "norm", norm, 1, l.device);
  core::Span span(core::SpanKind::op, "grad_norm");
  declare(span, grad_norm_cost(l.elements));
  if (on_cuda("grad_norm", l.device, DType::f32)) {
#if TACH_HAS_CUDA
    grad_norm_on_cuda(grads, l, norm.data<double>());
#endif
    return;
  }
  norm.data<double>()[0] = grad_norm_cpu(spans_of(grads));
}

void grad_norm(const AdamWTensors& t, const Tensor& norm) {
  const GradList l = check_grads("grad_norm", t.grads);
  const Device device = l.any || !norm.defined() ? l.device : norm.device();  // nothing trains: a norm of 0 where asked
  expect_f64_on("grad_norm", "norm", norm, 1, device);
  // The chunk records point into the gradients as listed: each must be there, with its parameter's size.
  for (size_t i = 0; i < t.grads.size(); ++i)
    if (i >= t.params.size() || !t.grads[i].defined() || t.grads[i].numel() != t.params[i].numel())
      bad_tensor("grad_norm", "gradient", t.grads[i], "its parameter's size (every listed gradient defined)");
  core::Span span(core::SpanKind::op, "grad_norm");
  declare(span, grad_norm_cost(l.elements));
  if (on_cuda("grad_norm", device, DType::f32)) {
#if TACH_HAS_CUDA
    const int64_t count = int64_t(t.chunks.size());
    const Tensor partials = Tensor::empty({std::max<int64_t>(count, 1)}, DType::f64, device, MemoryCategory::workspace);
    grad_norm_chunks_cuda(device.index, t.device_records(device), count, partials.data<double>());
    grad_norm_finish_cuda(device.index, partials.data<double>(), count, norm.data<double>());
#endif
    return;
  }
  norm.data<double>()[0] = grad_norm_cpu(spans_of(t.grads));
}

void clip_grads_to_norm(const std::vector<Tensor>& grads, double norm, double max_norm) {
  const GradList l = check_grads("clip_grad_norm", grads);
  const bool cuda = on_cuda("clip_grad_norm", l.device, DType::f32);
  core::Span span(core::SpanKind::op, "clip_grad_norm");
  declare(span, clip_grads_cost(l.elements));
  const float coef = clip_coefficient(norm, max_norm);
  if (coef >= 1.0f) return;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    if (cuda) {
#if TACH_HAS_CUDA
      scale_cuda(l.device.index, g.data<float>(), g.numel(), coef);
#endif
    } else {
      scale_cpu(g.data<float>(), g.numel(), coef);
    }
  }
}

void clip_grads_to_norm(const std::vector<Tensor>& grads, const Tensor& norm, double max_norm) {
  GradList l = check_grads("clip_grad_norm", grads);
  if (!l.any && norm.defined()) l.device = norm.device();
  expect_f64_on("clip_grad_norm", "norm", norm, 1, l.device);
  if (!on_cuda("clip_grad_norm", l.device, DType::f32)) {
    clip_grads_to_norm(grads, norm.data<double>()[0], max_norm);
    return;
  }
  core::Span span(core::SpanKind::op, "clip_grad_norm");
  declare(span, clip_grads_cost(l.elements));
#if TACH_HAS_CUDA
  for (const Tensor& g : grads)
    if (g.defined()) clip_by_norm_cuda(l.device.index, g.data<float>(), g.numel(), norm.data<double>(), max_norm);
#endif
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
