// GELU's training entry points and costs; the kernels are in gelu_cpu.cc and gelu_cuda.cu
// (inference fuses GELU into the linear's GEMM on the CPU).
#include "ops/gelu.h"

#include "core/trace.h"
#include "ops/activation_dtype.h"
#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost gelu_cost(int64_t n, DType dtype) {
  OpCost c;
  c.flops = double(n) * 8;  // erf counted as a few FLOPs, as the fused path counts it
  c.bytes_read = double(dtype_bytes(dtype, size_t(n)));
  c.bytes_written = double(dtype_bytes(dtype, size_t(n)));
  return c;
}

OpCost gelu_backward_cost(int64_t n) {
  OpCost c;
  c.flops = double(n) * 14;
  c.bytes_read = double(n) * 12;  // x, dout, and dx (accumulated)
  c.bytes_written = double(n) * 4;
  return c;
}

namespace {

void declare(core::Span& span, const OpCost& c) {
  if (span.active()) span.set_cost(c.flops, c.bytes());
}

// [M, N] from pre's shape (a 2-D tensor), for the fused bias form.
void check_bias_gelu(const char* op, const Tensor& a, const Tensor& b_or_db, const Tensor& c, const Tensor& d,
                     int64_t& M, int64_t& N) {
  if (c.dim() != 2) bad_tensor(op, "pre", c, "an f32 [M, N]");
  M = c.shape()[0], N = c.shape()[1];
  expect_matrix(op, "pre", c, M, N);
  expect_matrix(op, "act/dpre", a, M, N);
  if (d.defined()) expect_matrix(op, "dact", d, M, N);
  check_device(op, c.device(), {&a, &b_or_db, &d});
}

}  // namespace

void gelu_forward(const Tensor& out, const Tensor& x) {
  const int64_t n = x.numel();
  const DType A = x.defined() ? x.dtype() : DType::f32;
  expect_activations("gelu", "x", x, n, A);
  expect_activations("gelu", "out", out, n, A);
  check_device("gelu", x.device(), {&out});
  check_activation_dtype("gelu", x.device(), A);
  [[maybe_unused]] const bool cuda = on_cuda("gelu", x.device(), A);
  core::Span span(core::SpanKind::op, "gelu");
  if (span.active()) {
    const OpCost c = gelu_cost(n, A);
    span.set_cost(c.flops, c.bytes());
    span.set_detail(core::concat("[", n, "] ", dtype_name(A)));
  }
#if TACH_HAS_CUDA
  if (cuda) return gelu_forward_cuda(x.device().index, A, out.raw(), x.raw(), n);
#endif
  gelu_forward_cpu(out.data<float>(), x.data<float>(), n);
}

void gelu_backward(const Tensor& dx, const Tensor& x, const Tensor& dout) {
  const char* op = "gelu_backward";
  const int64_t n = x.numel();
  expect_f32(op, "x", x, n);
  expect_f32(op, "dout", dout, n);
  expect_f32(op, "dx", dx, n);
  check_device(op, x.device(), {&dx, &dout});
  [[maybe_unused]] const bool cuda = on_cuda(op, x.device(), DType::f32);
  core::Span span(core::SpanKind::op, op);
  declare(span, gelu_backward_cost(n));
#if TACH_HAS_CUDA
  if (cuda) return gelu_backward_cuda(x.device().index, dx.data<float>(), x.data<float>(), dout.data<float>(), n);
#endif
  gelu_backward_cpu(dx.data<float>(), x.data<float>(), dout.data<float>(), n);
}

void bias_gelu_forward(const Tensor& pre, const Tensor& act, const Tensor& b) {
  int64_t M = 0, N = 0;
  check_bias_gelu("bias_gelu", act, b, pre, Tensor(), M, N);
  expect_f32("bias_gelu", "b", b, N);
  [[maybe_unused]] const bool cuda = on_cuda("bias_gelu", pre.device(), DType::f32);
  core::Span span(core::SpanKind::op, "bias_gelu");
  declare(span, gelu_cost(M * N));
#if TACH_HAS_CUDA
  if (cuda)
    return bias_gelu_forward_cuda(pre.device().index, pre.data<float>(), act.data<float>(), b.data<float>(), M, N);
#endif
  bias_gelu_forward_cpu(pre.data<float>(), act.data<float>(), b.data<float>(), M, N);
}

void bias_gelu_backward(const Tensor& dpre, const Tensor& db, const Tensor& pre, const Tensor& dact) {
  int64_t M = 0, N = 0;
  check_bias_gelu("bias_gelu_backward", dpre, db, pre, dact, M, N);
  if (!dact.defined()) bad_tensor("bias_gelu_backward", "dact", dact, "defined");
  expect_f32_or_none("bias_gelu_backward", "db", db, N);
  [[maybe_unused]] const bool cuda = on_cuda("bias_gelu_backward", pre.device(), DType::f32);
  core::Span span(core::SpanKind::op, "bias_gelu_backward");
  declare(span, gelu_backward_cost(M * N));
#if TACH_HAS_CUDA
  if (cuda)
    return bias_gelu_backward_cuda(pre.device().index, dpre.data<float>(), db.defined() ? db.data<float>() : nullptr,
                                   pre.data<float>(), dact.data<float>(), M, N);
#endif
  bias_gelu_backward_cpu(dpre.data<float>(), db.defined() ? db.data<float>() : nullptr, pre.data<float>(),
                         dact.data<float>(), M, N);
}

}  // namespace tach::ops
