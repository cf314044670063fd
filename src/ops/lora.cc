#include "ops/lora.h"

#include <algorithm>
#include <string>

#include "ops/dispatch.h"
#include "ops/train_checks.h"

namespace tach::ops {

OpCost lora_cost(const LoraShape& s) {
  OpCost c;
  c.flops = 2.0 * double(s.M) * double(s.r) * double(s.K + s.N);
  c.bytes_read = 4.0 * (double(s.M) * double(s.K) + double(s.r) * double(s.K + s.N) + double(s.M) * double(s.N));
  c.bytes_written = 4.0 * (double(s.M) * double(s.r) + double(s.M) * double(s.N));
  return c;
}

OpCost lora_backward_cost(const LoraShape& s, bool needs_dx) {
  OpCost c;
  // dB, dxa, dA and (needs_dx) dx: GEMMs with the rank as one dimension.
  c.flops = 2.0 * double(s.M) * double(s.r) * double(2 * s.N + (needs_dx ? 2 : 1) * s.K);
  c.bytes_read = 4.0 * (2.0 * double(s.M) * double(s.K) + double(s.M) * double(s.N) + double(s.r) * double(s.K + s.N));
  c.bytes_written = 4.0 * (double(s.M) * double(s.K) + double(s.r) * double(s.K + s.N));
  return c;
}

namespace {

// The checks allocate nothing unless they fail (ops/train_checks.h): a step runs them per adapter
// and layer.
void expect_scratch(const char* op, const Tensor& t, int64_t elements) {
  if (elements > 0 && (!t.defined() || t.dtype() != DType::f32 || !dense(t) || t.numel() < elements))
    bad_tensor(op, "scratch", t, "contiguous f32 of at least " + std::to_string(elements) + " elements");
}

// The kernels' ldy (a single row's stride may be anything: the GEMMs need at least its width).
int64_t row_stride(const Tensor& t) { return std::max(t.strides()[0], t.size(1)); }

void declare(core::Span& span, const OpCost& c) {
  if (span.active()) span.set_cost(c.flops, c.bytes());
}

}  // namespace

void lora_forward_train(const Tensor& y, const Tensor& xa, const Tensor& x, const Tensor& A, const Tensor& B,
                        const LoraShape& s, const Tensor& scratch) {
  expect_matrix("lora", "x", x, s.M, s.K);
  expect_rows("lora", "y", y, s.M, s.N);
  expect_matrix("lora", "xa", xa, s.M, s.r);
  expect_matrix("lora", "A", A, s.r, s.K);
  expect_matrix("lora", "B", B, s.N, s.r);
  expect_scratch("lora", scratch, s.dropout > 0.f ? s.M * s.K : 0);
  check_device("lora", x.device(), {&y, &xa, &A, &B, &scratch});
  [[maybe_unused]] const bool cuda = on_cuda("lora", x.device(), DType::f32);
  core::Span span(core::SpanKind::op, "lora");
  declare(span, lora_cost(s));
#if TACH_HAS_CUDA
  if (cuda) {
    lora_forward_cuda(x.device().index, y.data<float>(), row_stride(y), xa.data<float>(), x.data<float>(),
                      A.data<float>(), B.data<float>(), s, scratch.defined() ? scratch.data<float>() : nullptr);
    return;
  }
#endif
  lora_forward_cpu(y.data<float>(), row_stride(y), xa.data<float>(), x.data<float>(), A.data<float>(), B.data<float>(),
                   s, scratch.defined() ? scratch.data<float>() : nullptr);
}

void lora_backward(const Tensor& dx, const Tensor& dA, const Tensor& dB, const Tensor& dy, const Tensor& x,
                   const Tensor& xa, const Tensor& A, const Tensor& B, const LoraShape& s, const Tensor& scratch) {
  if (dx.defined()) expect_matrix("lora_backward", "dx", dx, s.M, s.K);
  expect_matrix("lora_backward", "dA", dA, s.r, s.K);
  expect_matrix("lora_backward", "dB", dB, s.N, s.r);
  expect_rows("lora_backward", "dy", dy, s.M, s.N);
  expect_matrix("lora_backward", "x", x, s.M, s.K);
  expect_matrix("lora_backward", "xa", xa, s.M, s.r);
  expect_matrix("lora_backward", "A", A, s.r, s.K);
  expect_matrix("lora_backward", "B", B, s.N, s.r);
  expect_scratch("lora_backward", scratch, s.M * s.K + s.M * s.r);
  check_device("lora_backward", x.device(), {&dx, &dA, &dB, &dy, &xa, &A, &B, &scratch});
  [[maybe_unused]] const bool cuda = on_cuda("lora_backward", x.device(), DType::f32);
  core::Span span(core::SpanKind::op, "lora_backward");
  declare(span, lora_backward_cost(s, dx.defined()));
#if TACH_HAS_CUDA
  if (cuda) {
    lora_backward_cuda(x.device().index, dx.defined() ? dx.data<float>() : nullptr, dA.data<float>(), dB.data<float>(),
                       dy.data<float>(), row_stride(dy), x.data<float>(), xa.data<float>(), A.data<float>(),
                       B.data<float>(), s, scratch.data<float>());
    return;
  }
#endif
  lora_backward_cpu(dx.defined() ? dx.data<float>() : nullptr, dA.data<float>(), dB.data<float>(), dy.data<float>(),
                    row_stride(dy), x.data<float>(), xa.data<float>(), A.data<float>(), B.data<float>(), s,
                    scratch.data<float>());
}

}  // namespace tach::ops
