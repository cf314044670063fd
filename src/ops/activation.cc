#include "ops/activation.h"

#include "core/trace.h"
#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost activation_cost(int64_t n, DType dtype) {
  OpCost c;
  c.flops = double(n);
  c.bytes_read = double(dtype_bytes(dtype, size_t(n)));
  c.bytes_written = double(dtype_bytes(dtype, size_t(n)));
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
  const DType A = x.defined() ? x.dtype() : DType::f32;
  expect_activations(op, "x", x, n, A);
  expect_activations(op, "y", y, n, A);
  check_device(op, x.device(), {&y});
  check_activation_dtype(op, x.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda(op, x.device(), A);
  core::Span span(core::SpanKind::op, op);
  if (span.active()) {
    const OpCost c = activation_cost(n, A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", n, "] ", dtype_name(A)));
  }
#if TACH_HAS_CUDA
  if (cuda) {
    if (act == Activation::relu) relu_forward_cuda(x.device().index, A, y.raw(), x.raw(), n);
    else tanh_forward_cuda(x.device().index, A, y.raw(), x.raw(), n);
    return;
  }
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
