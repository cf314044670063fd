#include "ops/kl_distill.h"

#include <cmath>
#include <string>

#include "ops/cross_entropy.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

namespace {

// Both logits [outer, classes, inner] f32 on one device, labels [groups] i32 there or undefined,
// a finite positive temperature. Allocates nothing unless it fails (ops/train_checks.h).
void check_operands(const char* op, const Tensor& x, const char* x_name, const Tensor& teacher, const Tensor& labels,
                    SoftmaxGroups g, float temperature) {
  if (g.outer < 0 || g.classes < 1 || g.inner < 1)
    throw Error(std::string(op) + ": groups [" + std::to_string(g.outer) + ", " + std::to_string(g.classes) + ", " +
                std::to_string(g.inner) + "] need at least one class and one inner position");
  expect_f32(op, x_name, x, g.numel());
  expect_f32(op, "teacher", teacher, g.numel());
  if (labels.defined() && (labels.dtype() != DType::i32 || labels.numel() != g.groups() || !dense(labels)))
    bad_tensor(op, "labels", labels, "a contiguous i32 tensor of " + std::to_string(g.groups()) + " elements");
  check_device(op, x.device(), {&teacher, &labels});
  if (!(std::isfinite(temperature) && temperature > 0))
    throw Error(std::string(op) + ": the temperature must be a positive number, not " + std::to_string(temperature));
}

const int32_t* labels_of(const Tensor& labels) { return labels.defined() ? labels.data<int32_t>() : nullptr; }

void declare(core::Span& span, SoftmaxGroups g, bool backward) {
  if (!span.active()) return;
  const OpCost c = kl_distill_cost(g, backward);
  span.set_cost(c.flops, c.bytes());
  span.set_detail(core::concat("[", g.outer, ", ", g.classes, ", ", g.inner, "] f32"));
}

}  // namespace

OpCost kl_distill_cost(SoftmaxGroups g, bool backward) {
  const double n = double(g.numel());
  OpCost c;
  // Per element of each side: the scaling, the max, exp and the sum (4); the forward's term
  // p (log p - log q) 3 more, the backward's scale (q - p) 3 (exp and log counted as one each).
  c.flops = 2.0 * 4.0 * n + 3.0 * n;
  c.bytes_read = 8.0 * n + 4.0 * double(g.groups()) + (backward ? 4.0 * n : 0.0);
  c.bytes_written = backward ? 4.0 * n : 0.0;
  return c;
}

double kl_distill_forward(const Tensor& student, const Tensor& teacher, const Tensor& labels, SoftmaxGroups g,
                          float temperature) {
  if (student.defined() && on_cuda("kl_distill", student.device(), DType::f32)) {
    const Tensor loss = Tensor::empty({1}, DType::f64, student.device(), MemoryCategory::workspace);
    kl_distill_forward(loss, student, teacher, labels, g, temperature);
    return loss.to_device(Device::cpu()).data<double>()[0];
  }
  check_operands("kl_distill", student, "student", teacher, labels, g, temperature);
  core::Span span(core::SpanKind::op, "kl_distill");
  declare(span, g, false);
  return kl_distill_forward_cpu(student.data<float>(), teacher.data<float>(), labels_of(labels), g, temperature);
}

void kl_distill_forward(const Tensor& loss, const Tensor& student, const Tensor& teacher, const Tensor& labels,
                        SoftmaxGroups g, float temperature) {
  check_operands("kl_distill", student, "student", teacher, labels, g, temperature);
  expect_f64_on("kl_distill", "loss", loss, 1, student.device());
  if (!on_cuda("kl_distill", student.device(), DType::f32)) {
    loss.data<double>()[0] = kl_distill_forward(student, teacher, labels, g, temperature);
    return;
  }
  core::Span span(core::SpanKind::op, "kl_distill");
  declare(span, g, false);
#if TACH_HAS_CUDA
  const Tensor partials =
      Tensor::empty({std::max<int64_t>(1, g.groups())}, DType::f64, student.device(), MemoryCategory::workspace);
  kl_distill_forward_cuda(student.device().index, student.data<float>(), teacher.data<float>(), labels_of(labels), g,
                          temperature, partials.data<double>(), loss.data<double>());
#endif
}

void kl_distill_backward(const Tensor& dstudent, const Tensor& student, const Tensor& teacher, const Tensor& labels,
                         SoftmaxGroups g, float temperature, float scale) {
  check_operands("kl_distill_backward", dstudent, "dstudent", teacher, labels, g, temperature);
  expect_f32("kl_distill_backward", "student", student, g.numel());
  check_device("kl_distill_backward", dstudent.device(), {&student});
  const bool cuda = on_cuda("kl_distill_backward", dstudent.device(), DType::f32);
  core::Span span(core::SpanKind::op, "kl_distill_backward");
  declare(span, g, true);
  if (cuda) {
#if TACH_HAS_CUDA
    kl_distill_backward_cuda(dstudent.device().index, dstudent.data<float>(), student.data<float>(),
                             teacher.data<float>(), labels_of(labels), g, temperature, scale);
#endif
    return;
  }
  kl_distill_backward_cpu(dstudent.data<float>(), student.data<float>(), teacher.data<float>(), labels_of(labels), g,
                          temperature, scale);
}

}  // namespace tach::ops
