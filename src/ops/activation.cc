#include "ops/activation.h"

#include "core/trace.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost activation_cost(int64_t n) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = double(n) * 4;
  c.bytes_written = double(n) * 4;
  return c;
}

OpCost activation_backward_cost(int64_t n) {
  OpCost c;
  c.flops = double(n) * 3;
  c.bytes_read = double(n) * 12;
  c.bytes_written = double(n) * 4;
  return c;
}

namespace {

enum class Activation { relu, tanh };

void run_forward(const char* op, Activation act, const Tensor& y, const Tensor& x) {
  const int64_t n = x.numel();
  expect_f32(op, "x", x, n);
  expect_f32(op, "y", y, n);
  check_device(op, x.device(), {&y});
  [[maybe_unused]] const bool cuda = on_cuda(op, x.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    const OpCost c = activation_cost(n);
    span.set_cost(c.flops, c.bytes());
  }
#if TACH_HAS_CUDA
  if (cuda)
    return (act == Activation::relu ? relu_forward_cuda : tanh_forward_cuda)(x.device().index, y.data<float>(),
                                                                             x.data<float>(), n);
#endif
  (act == Activation::relu ? relu_forward_cpu : tanh_forward_cpu)(y.data<float>(), x.data<float>(), n);
}

void run_backward(const char* op, Activation act, const Tensor& dx, const Tensor& y, const Tensor& dy) {
  const int64_t n = y.numel();
  expect_f32(op, "y", y, n);
  expect_f32(op, "dy", dy, n);
  expect_f32(op, "dx", dx, n);
  check_device(op, y.device(), {&dx, &dy});
  [[maybe_unused]] const bool cuda = on_cuda(op, y.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    const OpCost c = activation_backward_cost(n);
    span.set_cost(c.flops, c.bytes());
  }
#if TACH_HAS_CUDA
  if (cuda)
    return (act == Activation::relu ? relu_backward_cuda : tanh_backward_cuda)(y.device().index, dx.data<float>(),
                                                                               y.data<float>(), dy.data<float>(), n);
#endif
  (act == Activation::relu ? relu_backward_cpu : tanh_backward_cpu)(dx.data<float>(), y.data<float>(), dy.data<float>(),
                                                                    n);
}

}  // namespace

void relu_forward(const Tensor& y, const Tensor& x) { run_forward("relu", Activation::relu, y, x); }
void relu_backward(const Tensor& dx, const Tensor& y, const Tensor& dy) {
  run_backward("relu_backward", Activation::relu, dx, y, dy);
}
void tanh_forward(const Tensor& y, const Tensor& x) { run_forward("tanh", Activation::tanh, y, x); }
void tanh_backward(const Tensor& dx, const Tensor& y, const Tensor& dy) {
  run_backward("tanh_backward", Activation::tanh, dx, y, dy);
}

}  // namespace tach::ops
